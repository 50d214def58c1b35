package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		payload string
		wantErr string
	}{
		{"ok", "session.placed", `{"session":"s","backend":"local","spec":""}`, ""},
		{"unknown field", "session.placed", `{"session":"s","backend":"local","spec":"","evil":1}`, "unknown field"},
		{"missing required", "session.placed", `{"session":"s"}`, "needs a session and a backend"},
		{"unknown type", "no.such", `{}`, "unknown event type"},
		{"not json", "session.placed", `{"session":`, "unexpected EOF"},
		{"trailing", "session.placed", `{"session":"s","backend":"l","spec":""} {}`, "trailing"},
		{"future version", "session.placed", `{}`, "newer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := 1
			if tt.name == "future version" {
				v = 99
			}
			_, err := events.Decode(tt.typ, v, []byte(tt.payload))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var de *events.DecodeError
			if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want DecodeError containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	a, err := events.CanonicalizeJSON([]byte(`{ "b": 1, "a": {"y": [1, 2.50], "x": "<&>"} }`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(a), `{"a":{"x":"<&>","y":[1,2.50]},"b":1}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := events.CanonicalizeJSON([]byte(`{} x`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

// FuzzDecode feeds arbitrary payloads to every event type: decoding must
// never panic, and whatever decodes must survive a canonical round trip.
func FuzzDecode(f *testing.F) {
	f.Add("session.placed", `{"session":"s","backend":"local","spec":""}`)
	f.Add("chunk.appended", `{"session":"s","index":0,"chunk":{"role":"user","content":"hi"}}`)
	f.Add("session.merged", `{"session":"m","parents":[{"id":"a","version":1,"len":1},{"id":"b","version":1,"len":2}],"strategy":"append","placement":{},"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"calls":0},"derivation":{"seed":"","scope":"a","op":"merge","counter":0}}`)
	f.Add("run.started", `{"run":"r","workflow":"w","seed":"x"}`)
	f.Fuzz(func(t *testing.T, typ, payload string) {
		p, err := events.Decode(typ, 1, []byte(payload))
		if err != nil {
			return
		}
		raw, err := events.Canonical(p)
		if err != nil {
			t.Fatalf("canonical of decoded %T: %v", p, err)
		}
		p2, err := events.Decode(typ, 1, raw)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", raw, err)
		}
		raw2, _ := events.Canonical(p2)
		if string(raw) != string(raw2) {
			t.Fatalf("round trip changed %s to %s", raw, raw2)
		}
	})
}
