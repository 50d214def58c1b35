package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
)

func TestEvidenceErased_Validate(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name string
		e    events.EvidenceErased
		ok   bool
	}{
		{"ok", events.EvidenceErased{Subject: "user:alice", By: "dpo", Reason: "request 7", KeyIDHash: hash}, true},
		{"no subject", events.EvidenceErased{By: "dpo", Reason: "r", KeyIDHash: hash}, false},
		{"no reason", events.EvidenceErased{Subject: "user:a", By: "dpo", Reason: " ", KeyIDHash: hash}, false},
		{"no by", events.EvidenceErased{Subject: "user:a", Reason: "r", KeyIDHash: hash}, false},
		{"control character", events.EvidenceErased{Subject: "user:a", By: "dpo", Reason: "r\x1b[2J", KeyIDHash: hash}, false},
		{"hash not hex", events.EvidenceErased{Subject: "user:a", By: "dpo", Reason: "r", KeyIDHash: strings.Repeat("AB", 32)}, false},
		{"hash short", events.EvidenceErased{Subject: "user:a", By: "dpo", Reason: "r", KeyIDHash: "ab"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.e.Validate()
			if got := err == nil; got != tt.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := events.Decode(events.TypeEvidenceErased, 1, []byte(`{"subject":"user:a","by":"dpo","reason":"r","key_id_hash":"`+hash+`"}`)); err != nil {
		t.Fatalf("the catalogue does not decode evidence.erased: %v", err)
	}
}
