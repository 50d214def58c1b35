package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/flow/model/modeltest"
)

// A named provider's endpoint comes from its config entry: OPENAI_API_KEY
// and OPENAI_BASE_URL belong to the official endpoint and must neither
// redirect the named provider nor be sent to it as its bearer token.
func TestRun_NamedProviderNeverGetsTheEnvironmentsKey(t *testing.T) {
	const officialKey = "sk-official-0123456789abcdef"
	tests := []struct {
		name, thirdKey, wantAuth string
	}{
		{"own key", "tp-key-abcdef123456", "Bearer tp-key-abcdef123456"},
		{"own key unset", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			official, third := modeltest.NewOpenAI(t), modeltest.NewOpenAI(t)
			third.Push(modeltest.Reply{Content: "hello from the third party"})
			home := t.TempDir()
			cfg := fmt.Sprintf(`{"providers": {"thirdparty": {"kind": "openai", "base_url": %q, "model": "m3", "api_key_env": "THIRD_KEY"}}}`, third.URL())
			if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("RATH_HOME", home)
			t.Setenv("OPENAI_API_KEY", officialKey)
			t.Setenv("OPENAI_BASE_URL", official.URL())
			t.Setenv("THIRD_KEY", tt.thirdKey)

			out := mustRun(t, t.TempDir(), "run", "--provider", "thirdparty", "--no-stream", "say hello")
			if !strings.Contains(out, "hello from the third party") {
				t.Fatalf("run output: %s", out)
			}
			if n := len(official.Requests()); n != 0 {
				t.Fatalf("OPENAI_BASE_URL overrode the named provider's base_url: the official server got %d requests", n)
			}
			reqs := third.Requests()
			if len(reqs) != 1 {
				t.Fatalf("third party got %d requests, want 1", len(reqs))
			}
			auth := reqs[0].Header.Get("Authorization")
			if strings.Contains(auth, officialKey) {
				t.Fatalf("the environment's OpenAI key was sent to the third party: %q", auth)
			}
			if auth != tt.wantAuth && !(tt.wantAuth == "" && (auth == "" || auth == "Bearer")) {
				t.Fatalf("Authorization = %q, want %q", auth, tt.wantAuth)
			}
		})
	}
}

// Without a named provider the environment's pair still applies.
func TestRun_EnvironmentProviderUsesItsPair(t *testing.T) {
	const officialKey = "sk-official-0123456789abcdef"
	official := modeltest.NewOpenAI(t)
	official.Push(modeltest.Reply{Content: "hello from the official endpoint"})
	t.Setenv("RATH_HOME", t.TempDir())
	t.Setenv("OPENAI_API_KEY", officialKey)
	t.Setenv("OPENAI_BASE_URL", official.URL())
	t.Setenv("OPENAI_DEFAULT_MODEL", "m1")
	mustRun(t, t.TempDir(), "run", "--no-stream", "say hello")
	reqs := official.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+officialKey {
		t.Fatalf("requests = %d, auth = %q", len(reqs), reqs[0].Header.Get("Authorization"))
	}
}
