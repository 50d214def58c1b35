package flow_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath/flow"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolveProvider_Order(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"default":"local","providers":{
		"local":{"kind":"openai","base_url":"http://file/v1","model":"file-model","api_key_env":"LOCAL_KEY","max_tokens":77},
		"claude":{"kind":"anthropic","model":"file-claude"}}}`), 0o644)
	tests := []struct {
		name                   string
		p                      flow.Provider
		env                    map[string]string
		kind, model, base, key string
		maxTokens              int
	}{
		{"config default", flow.Provider{}, map[string]string{"LOCAL_KEY": "k-file"}, "openai", "file-model", "http://file/v1", "k-file", 77},
		{"file beats env", flow.Provider{}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "k-env"}, "openai", "file-model", "http://file/v1", "", 77},
		{"file key with file url", flow.Provider{}, map[string]string{"OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "k-env", "LOCAL_KEY": "k-file"}, "openai", "file-model", "http://file/v1", "k-file", 77},
		{"env pair without a named provider", flow.Provider{Kind: "openai"}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "k-env"}, "openai", "env-model", "http://env/v1", "k-env", 0},
		{"explicit url never gets the env key", flow.Provider{Kind: "openai", BaseURL: "http://mine/v1"}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_API_KEY": "k-env"}, "openai", "env-model", "http://mine/v1", "", 0},
		{"explicit beats env", flow.Provider{Model: "explicit", APIKey: "k-x"}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_API_KEY": "k-env"}, "openai", "explicit", "http://file/v1", "k-x", 77},
		{"named provider", flow.Provider{Name: "claude"}, map[string]string{"ANTHROPIC_API_KEY": "k-a"}, "anthropic", "file-claude", "", "k-a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flow.ResolveProviderConfig(tt.p, flow.ResolveOptions{Getenv: env(tt.env), ConfigPath: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.kind || got.Model != tt.model || got.BaseURL != tt.base || got.APIKey != tt.key || got.MaxTokens != tt.maxTokens {
				t.Fatalf("got kind=%s model=%s base=%s key=%s max=%d", got.Kind, got.Model, got.BaseURL, got.APIKey, got.MaxTokens)
			}
		})
	}
}

func TestResolveProvider_Errors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"providers": {"x": {"kind": "openai", "typo": 1}}}`), 0o644)
	tests := []struct {
		name string
		p    flow.Provider
		cfg  string
	}{
		{"unknown named provider", flow.Provider{Name: "ghost"}, filepath.Join(dir, "none.json")},
		{"config with unknown field", flow.Provider{}, bad},
		{"no kind at all", flow.Provider{}, filepath.Join(dir, "none.json")},
		{"unknown kind", flow.Provider{Kind: "llama-farm"}, filepath.Join(dir, "none.json")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := flow.ResolveProvider(tt.p, flow.ResolveOptions{Getenv: env(nil), ConfigPath: tt.cfg})
			if !errors.Is(err, flow.ErrProvider) {
				t.Fatalf("err = %v, want ErrProvider", err)
			}
		})
	}
}
