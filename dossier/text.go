package dossier

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// anchors hands out HTML ids: a prefix and the sanitized key, made unique
// with a counter, so ids taken from the log (any text) stay valid
// fragment identifiers.
type anchors struct{ used map[string]int }

func (a *anchors) make(prefix, key string) string {
	if a.used == nil {
		a.used = map[string]int{}
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteByte('-')
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	id := b.String()
	if n := a.used[id]; n > 0 {
		a.used[id] = n + 1
		id = fmt.Sprintf("%s-%d", id, n+1)
	}
	a.used[id]++
	return id
}

// clip cuts s to at most limit bytes (on a rune boundary) and says how
// much was left out; a negative limit keeps everything.
func clip(s string, limit int) (string, string) {
	if limit < 0 || len(s) <= limit {
		return s, ""
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], fmt.Sprintf("[%d of %d bytes shown]", cut, len(s))
}

// isBinary reports content that is not text: invalid UTF-8 or a NUL byte.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}

// short abbreviates a hash or long id for display.
func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// shortStream abbreviates a stream name, keeping a side stream's prefix
// ("decisions:s-7b26…") readable.
func shortStream(s string) string {
	if prefix, id, ok := strings.Cut(s, ":"); ok {
		return prefix + ":" + short(id)
	}
	return short(s)
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
