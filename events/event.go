package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Payload is the typed body of an event. Every event type in the catalogue is
// a struct implementing it; the type name is stored in the events.type column
// and the version in events.type_version.
type Payload interface {
	EventType() string
	EventVersion() int
}

// Validator is implemented by payloads that check their required fields.
// Append and Decode call it, so an invalid event is neither written nor read
// back silently.
type Validator interface {
	Validate() error
}

// StreamPayload is implemented by payloads that name the stream they belong
// to (a session id, a run id), so callers cannot put them on the wrong one.
type StreamPayload interface {
	Payload
	StreamID() string
}

// Event is one stored event.
type Event struct {
	Seq         int64           `json:"seq"`
	Stream      string          `json:"stream"`
	Version     int64           `json:"version"`
	Type        string          `json:"type"`
	TypeVersion int             `json:"type_version"`
	RunID       string          `json:"run_id,omitempty"`
	Payload     json.RawMessage `json:"payload"`
	At          time.Time       `json:"at"`
	Hash        string          `json:"hash"`
	// Redacted says the payload was deleted by a redaction (Payload is
	// then a placeholder and Decode fails with ErrRedacted).
	Redacted bool `json:"redacted,omitempty"`
	// SealedUnder names the key the stored payload is sealed under, zero
	// for one stored in clear. Every read of the store sets it, so a
	// reader that seals what it derives from the event (a rebuild of the
	// read models) needs no other read; it is not part of the JSON.
	SealedUnder SealKey `json:"-"`
}

// SealKey names a subject's data key (package keyring): the subject and
// the key's id.
type SealKey struct {
	Subject, ID string
}

// Decode decodes the event's payload into its catalogue struct.
func (e Event) Decode() (Payload, error) {
	p, err := Decode(e.Type, e.TypeVersion, e.Payload)
	if err != nil {
		if de, ok := err.(*DecodeError); ok {
			de.Seq = e.Seq
		}
		return nil, err
	}
	return p, nil
}

// Canonical returns the canonical JSON encoding of a payload: encoding/json
// output without HTML escaping and without a trailing newline. For the
// catalogue's structs this is deterministic (fields in declaration order,
// map keys sorted), which is what the hash chain and replay comparisons
// rely on. A payload type must not hold json.RawMessage or interface values
// whose text could vary; normalize those with CanonicalizeJSON first.
func Canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("events: canonical json: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// CanonicalizeJSON rewrites arbitrary JSON text into a canonical form:
// object keys sorted, no insignificant white space, numbers as written.
func CanonicalizeJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("events: canonical json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("events: canonical json: trailing data after value")
	}
	// encoding/json sorts map keys and keeps json.Number text as is.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("events: canonical json: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// upcaster rewrites the JSON of an old version of an event type into the
// next version.
type upcaster func(json.RawMessage) (json.RawMessage, error)

type typeInfo struct {
	version int
	newFn   func() Payload
	// upcasters[v] turns version v into v+1.
	upcasters map[int]upcaster
}

// catalogue maps each event type name to its current version and
// constructor. It is built once from a literal and never modified.
var catalogue = buildCatalogue()

// Types lists the event types in the catalogue with their current versions.
func Types() map[string]int {
	out := make(map[string]int, len(catalogue))
	for name, ti := range catalogue {
		out[name] = ti.version
	}
	return out
}

// Decode decodes a payload of the given type and version into its catalogue
// struct. Unknown fields are rejected, old versions are upcast, and
// payloads that implement Validator are validated.
func Decode(typ string, version int, payload []byte) (Payload, error) {
	return decodeWith(catalogue, typ, version, payload)
}

// decodeWith is Decode against catalogue cat.
func decodeWith(cat map[string]*typeInfo, typ string, version int, payload []byte) (Payload, error) {
	switch string(payload) {
	case RedactedMarker:
		return nil, &DecodeError{Type: typ, Err: ErrRedacted}
	case ErasedMarker:
		return nil, &DecodeError{Type: typ, Err: ErrErased}
	}
	ti, ok := cat[typ]
	if !ok {
		return nil, &DecodeError{Type: typ, Err: fmt.Errorf("%w %q", ErrUnknownType, typ)}
	}
	if version <= 0 {
		version = 1
	}
	if version > ti.version {
		return nil, &DecodeError{Type: typ, Err: fmt.Errorf("version %d is newer than this build knows (%d)", version, ti.version)}
	}
	raw := json.RawMessage(payload)
	for v := version; v < ti.version; v++ {
		up, ok := ti.upcasters[v]
		if !ok {
			return nil, &DecodeError{Type: typ, Err: fmt.Errorf("no upcaster from version %d", v)}
		}
		var err error
		if raw, err = up(raw); err != nil {
			return nil, &DecodeError{Type: typ, Err: fmt.Errorf("upcast from version %d: %w", v, err)}
		}
	}
	p := ti.newFn()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, &DecodeError{Type: typ, Err: err}
	}
	if dec.More() {
		return nil, &DecodeError{Type: typ, Err: fmt.Errorf("trailing data after payload")}
	}
	if v, ok := p.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, &DecodeError{Type: typ, Err: err}
		}
	}
	return p, nil
}

// RunRef identifies the run that events are produced by. The log stamps
// the id onto the events of an append made for the run (eventlog.Scope);
// package session derives ids from the seed.
type RunRef struct {
	ID   string
	Seed string
}

type subjectKey struct{}

// ContextWithSubject returns a context whose appends are content of
// subject ("user:ID", see package keyring): with a key-encryption key,
// their payloads and blobs are sealed under the subject's key, inside a
// run or not.
func ContextWithSubject(ctx context.Context, subject string) context.Context {
	return context.WithValue(ctx, subjectKey{}, subject)
}

// SubjectFromContext returns the subject set by ContextWithSubject, or "".
func SubjectFromContext(ctx context.Context) string {
	s, _ := ctx.Value(subjectKey{}).(string)
	return s
}
