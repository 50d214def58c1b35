package events

import (
	"strings"
	"unicode"
)

// What an erasure leaves in the log. Content sealed under a subject's
// data key (package keyring) is forgotten by destroying that key: the
// ciphertext stays, so every leaf, root and proof holds, and no one can
// read it again. The record of that is an evidence.erased event on
// StreamEvidence, beside the records of redactions.

// TypeEvidenceErased is the type of the event recording an erasure.
const TypeEvidenceErased = "evidence.erased"

// maxErasedText bounds By and Reason, as a redaction's are bounded.
const maxErasedText = 1000

// EvidenceErased records that the data key of Subject was destroyed, by
// whom (By) and why (Reason); when is the event's time. KeyIDHash is the
// hex SHA-256 of the destroyed key's id: it names the key without naming
// it, so that a key restored from a copy kept elsewhere is recognised
// (verify fails if the store holds it again) while the record gives no
// handle on the key to anyone who has only the log.
//
// Shapes keep the structure of the subject's events that start a session
// or link it to others (as EvidenceRedacted's do): once their payloads no
// longer open, the projections still rebuild the session graph from them.
type EvidenceErased struct {
	Subject   string  `json:"subject"`
	By        string  `json:"by"`
	Reason    string  `json:"reason"`
	KeyIDHash string  `json:"key_id_hash"`
	Shapes    []Shape `json:"shapes,omitempty"`
}

func (EvidenceErased) EventType() string { return TypeEvidenceErased }
func (EvidenceErased) EventVersion() int { return 1 }
func (EvidenceErased) StreamID() string  { return StreamEvidence }

// Validate requires a subject, who, why and a SHA-256 in hex, each free of
// control characters: verify prints them.
func (e EvidenceErased) Validate() error {
	if e.Subject == "" || strings.TrimSpace(e.By) == "" || strings.TrimSpace(e.Reason) == "" {
		return invalid("evidence.erased needs a subject, by and a reason")
	}
	for name, v := range map[string]string{"subject": e.Subject, "by": e.By, "reason": e.Reason} {
		if len(v) > maxErasedText {
			return invalid("evidence.erased: %s is longer than %d bytes", name, maxErasedText)
		}
		if strings.ContainsFunc(v, func(c rune) bool { return unicode.IsControl(c) || c == unicode.ReplacementChar }) {
			return invalid("evidence.erased: %s holds control characters", name)
		}
	}
	if len(e.KeyIDHash) != 64 || strings.Trim(e.KeyIDHash, "0123456789abcdef") != "" {
		return invalid("evidence.erased: key_id_hash is not a hex SHA-256")
	}
	return nil
}
