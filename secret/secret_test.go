package secret_test

import (
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/secret"
)

func TestRedactor_Redact(t *testing.T) {
	r := secret.New(
		secret.Secret{Name: "OPENAI_API_KEY", Value: "sk-abcdefgh1234"},
		secret.Secret{Name: "LONG", Value: "sk-abcdefgh1234-and-more"},
		secret.Secret{Name: "QUOTED", Value: `pa"ss<word>\x`},
		secret.Secret{Name: "SHORT", Value: "1234"},
	)
	tests := []struct {
		name, in, want string
		hits           []events.Redaction
	}{
		{"nothing", "plain text", "plain text", nil},
		{"raw", "key=sk-abcdefgh1234;", "key=[redacted:OPENAI_API_KEY];", []events.Redaction{{Name: "OPENAI_API_KEY", Count: 1}}},
		{"twice", "sk-abcdefgh1234 sk-abcdefgh1234", "[redacted:OPENAI_API_KEY] [redacted:OPENAI_API_KEY]", []events.Redaction{{Name: "OPENAI_API_KEY", Count: 2}}},
		{"longest first", "sk-abcdefgh1234-and-more", "[redacted:LONG]", []events.Redaction{{Name: "LONG", Count: 1}}},
		{"json escaped", `{"c":"pa\"ss<word>\\x"}`, `{"c":"[redacted:QUOTED]"}`, []events.Redaction{{Name: "QUOTED", Count: 1}}},
		{"json html escaped", `{"c":"pa\"ss\u003cword\u003e\\x"}`, `{"c":"[redacted:QUOTED]"}`, []events.Redaction{{Name: "QUOTED", Count: 1}}},
		{"too short to redact", "pin 1234", "pin 1234", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, hits := r.Redact([]byte(tt.in))
			if string(out) != tt.want {
				t.Fatalf("Redact = %s, want %s", out, tt.want)
			}
			if len(hits) != len(tt.hits) {
				t.Fatalf("hits = %v, want %v", hits, tt.hits)
			}
			for i := range hits {
				if hits[i] != tt.hits[i] {
					t.Fatalf("hits = %v, want %v", hits, tt.hits)
				}
			}
		})
	}
	if r.Len() != 3 {
		t.Fatalf("Len = %d, want 3 (the short value is refused)", r.Len())
	}
}

func TestRedactor_AddWhileInUse(t *testing.T) {
	r := secret.New()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			r.Redact([]byte("text with late-secret-value"))
		}
	}()
	r.Add("LATE", "late-secret-value")
	<-done
	if got := r.String("x late-secret-value"); got != "x [redacted:LATE]" {
		t.Fatalf("String = %q", got)
	}
}

func TestMarker_NameIsSafe(t *testing.T) {
	if m := secret.Marker(`a"b c]`); strings.ContainsAny(m[len(secret.MarkerPrefix):len(m)-1], `" ]`) {
		t.Fatalf("Marker = %q", m)
	}
}

func TestFromEnviron(t *testing.T) {
	got := secret.FromEnviron([]string{"OPENAI_API_KEY=a", "GITHUB_TOKEN=b", "KEYBOARD_LAYOUT=c", "SSH_AUTH_SOCK=/tmp/ssh-abcdef/agent.1", "PATH=/bin", "DB_PASSWORD=d", "EMPTY_TOKEN=", "MY_SECRET_X=e"})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "OPENAI_API_KEY,GITHUB_TOKEN,DB_PASSWORD,MY_SECRET_X" {
		t.Fatalf("names = %v", names)
	}
}
