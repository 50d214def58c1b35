package events

import (
	"errors"
	"fmt"
	"slices"
)

// What a redaction leaves in the log: the marker that replaces a deleted
// payload, the record of the deletion, and the record of the secrets a
// store's Redactor removed before an event was written.

// RedactedMarker is the payload column of a redacted event. The schema's
// trigger allows exactly this one UPDATE, and only after the redactions
// row is in place.
const RedactedMarker = `{"$redacted":true}`

// ErasedMarker is the payload a read returns for an event whose content
// was sealed under a subject's key (package keyring) that was erased
// since: the row keeps its ciphertext, which nothing can open. Readers
// treat it as they treat RedactedMarker (Event.Redacted is set).
const ErasedMarker = `{"$erased":true}`

// ErrErased is matched (through a *DecodeError) when an event's payload
// belongs to an erased subject. It wraps ErrRedacted, so every reader
// that skips redacted content skips erased content too.
var ErrErased = fmt.Errorf("events: the payload's subject was erased: %w", ErrRedacted)

// SealedPrefix starts a payload or blob sealed under a subject's key
// (package keyring's sealed form, which keeps this prefix): a row
// holding one is stored as is, never compacted or expanded.
const SealedPrefix = `{"$sealed":1,`

// ErrRedacted is matched (through a *DecodeError) when an event's payload
// was deleted by a redaction: the event is still in the log, its content
// is not. Readers treat it as an event they cannot read, not as damage.
var ErrRedacted = errors.New("events: the payload was redacted")

// TypeEvidenceRedacted is the type of the event recording a redaction.
const TypeEvidenceRedacted = "evidence.redacted"

// StreamEvidence is the stream of evidence.redacted events.
const StreamEvidence = "rath-evidence"

// EvidenceRedacted records that the payloads of the events in Ranges were
// deleted, by whom and why. Ranges are inclusive [first, last] seq pairs in
// ascending order.
type EvidenceRedacted struct {
	Ranges [][2]int64 `json:"ranges"`
	By     string     `json:"by"`
	Reason string     `json:"reason"`
	// Scope and Target say what was asked for: "event" and a seq,
	// "session" and its id, "memory" and its namespace, "retention" and
	// the runs.
	Scope  string `json:"scope,omitempty"`
	Target string `json:"target,omitempty"`
	// Shapes keep the structure of the redacted events that start a
	// session (shape.go), so the log still rebuilds every session that
	// shares theirs. Version 1 records have none.
	Shapes []Shape `json:"shapes,omitempty"`
}

func (EvidenceRedacted) EventType() string { return TypeEvidenceRedacted }

// EventVersion is 2: version 2 added Shapes, so a build that does not
// know them refuses the record rather than dropping them unseen.
func (EvidenceRedacted) EventVersion() int { return 2 }
func (EvidenceRedacted) StreamID() string  { return StreamEvidence }
func (e EvidenceRedacted) Validate() error {
	if len(e.Ranges) == 0 || e.By == "" || e.Reason == "" {
		return invalid("evidence.redacted needs ranges, by and a reason")
	}
	prev := int64(0)
	for _, r := range e.Ranges {
		if r[0] <= prev || r[1] < r[0] {
			return invalid("evidence.redacted: range %d-%d is not ascending after %d", r[0], r[1], prev)
		}
		prev = r[1]
	}
	return nil
}

// Covers reports whether seq is in one of the ranges.
func (e EvidenceRedacted) Covers(seq int64) bool {
	i, found := slices.BinarySearchFunc(e.Ranges, seq, func(r [2]int64, s int64) int {
		switch {
		case r[1] < s:
			return -1
		case r[0] > s:
			return 1
		}
		return 0
	})
	return found && i >= 0
}

// Redaction counts the occurrences of one secret replaced in a payload or
// blob. It names the secret, never its value.
type Redaction struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// StreamRedactions is the stream that records, with one secret.redacted
// event per redacted event or blob, what the store's Redactor removed.
const StreamRedactions = "rath-redactions"

// TypeSecretRedacted is the type of SecretRedacted.
const TypeSecretRedacted = "secret.redacted"

// SecretRedacted records that secrets were removed from an event (Seq,
// Stream, Type) or from a blob (Stream, Blob: its hash as stored) before
// it was written. It names the secrets, never their values.
type SecretRedacted struct {
	Seq     int64       `json:"seq,omitempty"`
	Stream  string      `json:"stream,omitempty"`
	Type    string      `json:"type,omitempty"`
	Blob    string      `json:"blob,omitempty"`
	Secrets []Redaction `json:"secrets"`
}

func (SecretRedacted) EventType() string { return TypeSecretRedacted }
func (SecretRedacted) EventVersion() int { return 1 }

// Validate requires at least one named secret.
func (e SecretRedacted) Validate() error {
	if len(e.Secrets) == 0 {
		return invalid("secret.redacted names no secret")
	}
	for _, r := range e.Secrets {
		if r.Name == "" || r.Count <= 0 {
			return invalid("secret.redacted: a secret needs a name and a positive count")
		}
	}
	return nil
}
