package eventlog

import (
	"context"
	"fmt"
	"github.com/gorath/rath/events"
	"maps"
	"slices"
	"sync"
)

// Redactor removes secret values from bytes before the store writes them
// (package secret implements it). Redact must not modify b and must return
// b itself, with no redactions, when it finds nothing.
type Redactor interface {
	Redact(b []byte) ([]byte, []events.Redaction)
}

// foundSecret is a secret.redacted record and where its event is in its
// request, until the event has a seq.
type foundSecret struct {
	events.SecretRedacted
	write, item int
}

// redactRequest runs the store's Redactor over a request's blobs and
// payloads before anything is hashed or written. A redacted blob changes
// hash, so the payloads of the request that reference the old hash are
// rewritten to the new one first; a redacted payload is decoded again, so
// projectors see what is stored. It returns what to record once the
// request has committed.
func (s *Store) redactRequest(req *request) ([]foundSecret, error) {
	r := s.opts.Redactor
	if r == nil {
		return nil, nil
	}
	var recs []foundSecret
	rehash := s.rehash.snapshot()
	fresh := map[string]string{}
	sizes := map[string]int{} // of the redacted blobs, by new hash
	for wi := range req.writes {
		w := &req.writes[wi]
		if w.stream == events.StreamRedactions {
			continue // the records name secrets; never redact them into a loop
		}
		cloned := false
		for bi, b := range w.blobs {
			// A blob may reference blobs redacted earlier (a request's
			// message segments chain by hash): point it at their new
			// hashes, which changes its own.
			in, remapped := remapHashes(b, rehash)
			out, hits := r.Redact(in)
			if len(hits) == 0 && !remapped {
				continue
			}
			if !cloned { // the caller's slice is not ours to change
				w.blobs, cloned = slices.Clone(w.blobs), true
			}
			w.blobs[bi] = out
			newHash := BlobHash(out)
			if rehash == nil {
				rehash = map[string]string{}
			}
			rehash[BlobHash(b)], fresh[BlobHash(b)] = newHash, newHash
			sizes[newHash] = len(out)
			if len(hits) > 0 {
				recs = append(recs, foundSecret{SecretRedacted: events.SecretRedacted{Stream: w.stream, Blob: newHash, Secrets: hits}})
			}
		}
	}
	s.rehash.add(fresh)
	for wi := range req.writes {
		w := &req.writes[wi]
		if w.stream == events.StreamRedactions {
			continue
		}
		for ii := range w.items {
			it := &w.items[ii]
			raw, remapped := remapHashes(it.payload, rehash)
			raw, hits := r.Redact(raw)
			if len(hits) == 0 && !remapped {
				continue
			}
			// Markers are plain text inside JSON strings, so the result
			// decodes; re-encoding keeps it canonical.
			p, err := events.Decode(it.typ, it.version, raw)
			if err != nil {
				return nil, fmt.Errorf("append %s: redacting secrets: %w", it.typ, err)
			}
			if tr, ok := p.(*events.ToolReturned); ok {
				// The size is the stored output's, as a replay measures it.
				if n, ok := sizes[tr.OutputRef]; ok {
					tr.OutputSize = n
				}
			}
			if raw, err = events.Canonical(p); err != nil {
				return nil, fmt.Errorf("append %s: redacting secrets: %w", it.typ, err)
			}
			it.payload, it.p = raw, p
			if len(hits) > 0 {
				recs = append(recs, foundSecret{SecretRedacted: events.SecretRedacted{Stream: w.stream, Type: it.typ, Secrets: hits}, item: ii, write: wi})
			}
		}
	}
	return recs, nil
}

// rehashes remembers, for the life of the Store, the new hash of every
// blob the Redactor changed, so later blobs and payloads that reference
// one by its old hash are pointed at what was stored.
type rehashes struct {
	mu sync.Mutex // protects m
	m  map[string]string
}

func (h *rehashes) snapshot() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m) == 0 {
		return nil
	}
	return maps.Clone(h.m)
}

func (h *rehashes) add(m map[string]string) {
	if len(m) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]string{}
	}
	maps.Copy(h.m, m)
}

// remapHashes returns b with every blob hash (a run of exactly 64 lower
// case hex digits) that m maps replaced, and whether there was one (if
// not, b itself). One pass, whatever the size of m.
func remapHashes(b []byte, m map[string]string) ([]byte, bool) {
	if len(m) == 0 {
		return b, false
	}
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if !isHex(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isHex(b[j]) {
			j++
		}
		if j-i == 64 {
			if nu, ok := m[string(b[i:j])]; ok {
				out = append(append(out, b[last:i]...), nu...)
				last = j
			}
		}
		i = j
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// recordRedactions appends what redactRequest found, now that the events
// it names have seqs. It runs outside the request's transaction and run
// (a replay does not reproduce it); if it fails, the markers in the
// stored text still say what was removed.
func (s *Store) recordRedactions(ctx context.Context, req *request, stored []events.Event, recs []foundSecret) {
	if len(recs) == 0 {
		return
	}
	// Stored events come back in the order of the request's writes and items.
	offset := make([]int, len(req.writes))
	n := 0
	for i, w := range req.writes {
		offset[i] = n
		n += len(w.items)
	}
	evs := make([]events.Payload, 0, len(recs))
	for _, f := range recs {
		if f.Type != "" {
			if k := offset[f.write] + f.item; k < len(stored) {
				f.Seq = stored[k].Seq
			}
		}
		evs = append(evs, f.SecretRedacted)
	}
	// In no run and carrying nothing: the append that found the secrets
	// may be the one carrying writes, still in flight, and waiting for it
	// would never end (carried.go).
	_, _ = s.AppendWrites(context.WithoutCancel(ctx), Write{Stream: events.StreamRedactions, Expected: AnyVersion, Events: evs})
}
