package secret

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/gorath/rath/events"
)

// MinLen is the shortest value a Redactor redacts.
const MinLen = 8

// MarkerPrefix starts every marker a Redactor writes.
const MarkerPrefix = "[redacted:"

// Marker returns the text that stands in for the secret called name.
func Marker(name string) string { return MarkerPrefix + cleanName(name) + "]" }

// cleanName keeps a name safe inside JSON text and a terminal: letters,
// digits and ._:- only.
func cleanName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == ':', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "secret"
	}
	return b.String()
}

// entry is one secret with the byte forms it can take in a payload.
type entry struct {
	name   string
	value  string
	forms  [][]byte // raw, then JSON-escaped variants that differ from it
	marker []byte
}

// Redactor replaces known secret values. The zero value is not usable;
// build one with New. It is safe for concurrent use, and Add may be
// called while it is in use (a provider's key is known only once the
// provider is resolved).
type Redactor struct {
	mu      sync.RWMutex // protects entries
	entries []entry      // longest value first, so a secret containing another wins
}

// New returns a Redactor for the given secrets (see Add).
func New(secrets ...Secret) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.Add(s.Name, s.Value)
	}
	return r
}

// Secret is a named secret value.
type Secret struct {
	Name  string
	Value string
}

// Add registers value under name and reports whether it will be
// redacted: values shorter than MinLen are not. Adding a value already
// known keeps its first name.
func (r *Redactor) Add(name, value string) bool {
	if len(value) < MinLen {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.value == value {
			return true
		}
	}
	e := entry{name: cleanName(name), value: value, forms: [][]byte{[]byte(value)}}
	e.marker = []byte(Marker(e.name))
	for _, html := range []bool{false, true} {
		if f := jsonForm(value, html); !containsForm(e.forms, f) {
			e.forms = append(e.forms, f)
		}
	}
	r.entries = append(r.entries, e)
	sort.SliceStable(r.entries, func(i, j int) bool { return len(r.entries[i].value) > len(r.entries[j].value) })
	return true
}

// jsonForm is value as it appears inside a JSON string, with or without
// encoding/json's HTML escaping.
func jsonForm(value string, html bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(value) // a string always encodes
	b := bytes.TrimSpace(buf.Bytes())
	return b[1 : len(b)-1]
}

func containsForm(forms [][]byte, f []byte) bool {
	for _, g := range forms {
		if bytes.Equal(g, f) {
			return true
		}
	}
	return false
}

// Len returns the number of secrets redacted.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

// Names lists the names of the secrets redacted, sorted.
func (r *Redactor) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e.name)
	}
	sort.Strings(out)
	return out
}

// Redact returns b with every known secret replaced by its marker, and
// what it replaced (sorted by name). When nothing is found it returns b
// itself and no redactions. b is never modified.
func (r *Redactor) Redact(b []byte) ([]byte, []events.Redaction) {
	if r == nil {
		return b, nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := b
	counts := map[string]int{}
	for _, e := range r.entries {
		for _, f := range e.forms {
			n := bytes.Count(out, f)
			if n == 0 {
				continue
			}
			out = bytes.ReplaceAll(out, f, e.marker)
			counts[e.name] += n
		}
	}
	if len(counts) == 0 {
		return b, nil
	}
	hits := make([]events.Redaction, 0, len(counts))
	for name, n := range counts {
		hits = append(hits, events.Redaction{Name: name, Count: n})
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].Name < hits[j].Name })
	return out, hits
}

// String is Redact for text.
func (r *Redactor) String(s string) string {
	out, hits := r.Redact([]byte(s))
	if len(hits) == 0 {
		return s
	}
	return string(out)
}
