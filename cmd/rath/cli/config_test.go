package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rath config shows the resolved provider, flag over file over
// environment, and never the key's bytes (at most its last 4).
func TestConfig_ResolvedWithKeyMasked(t *testing.T) {
	const fileKey, envKey = "tp-secret-key-0123456789wxyz", "sk-envsecret-abcdefghij9876"
	home := t.TempDir()
	cfg := `{"default": "third", "providers": {"third": {"kind": "openai", "base_url": "http://third.example/v1", "model": "m3", "api_key_env": "THIRD_KEY", "retry": {"initial_backoff": "1s"}}}}`
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RATH_HOME", home)
	t.Setenv("THIRD_KEY", fileKey)
	t.Setenv("OPENAI_API_KEY", envKey)
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	dir := t.TempDir()
	tests := []struct {
		name                          string
		argv                          []string
		model, baseURL, key, provider string
	}{
		{"default provider", nil, "m3", "http://third.example/v1", "[set] …wxyz", "third"},
		{"flag over file", []string{"--model", "m9"}, "m9", "http://third.example/v1", "[set] …wxyz", "third"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decodeJSON[configView](t, mustRun(t, dir, append([]string{"config", "--json"}, tt.argv...)...))
			if v.Model != tt.model || v.BaseURL != tt.baseURL || v.APIKey != tt.key || v.Provider != tt.provider || v.InitialBackoff != "1s" {
				t.Fatalf("config = %+v", v)
			}
		})
	}
	// Without a selected provider the environment's pair applies.
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	v := decodeJSON[configView](t, mustRun(t, dir, "config", "--json"))
	if v.Kind != "openai" || v.APIKey != "[set] …9876" {
		t.Fatalf("config from the environment = %+v", v)
	}
	for _, argv := range [][]string{{"config"}, {"config", "--json"}} {
		r := rathCLI(t, dir, argv...)
		for _, k := range []string{fileKey, envKey, fileKey[:12], envKey[:12]} {
			if strings.Contains(r.stdout+r.stderr, k) {
				t.Fatalf("%v printed key bytes %q:\n%s%s", argv, k, r.stdout, r.stderr)
			}
		}
	}
	// No rath store is needed, and none is made.
	if _, err := os.Stat(filepath.Join(dir, "rath.db")); err == nil {
		t.Fatal("rath config created a store")
	}
}

func TestMaskSecret(t *testing.T) {
	for key, want := range map[string]string{"": "(none)", "short-key": "[set]", "sk-0123456789abcdefgh": "[set] …efgh"} {
		if got := maskSecret(key); got != want {
			t.Errorf("maskSecret(%q) = %q, want %q", key, got, want)
		}
	}
}
