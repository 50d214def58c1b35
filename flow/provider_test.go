package flow_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
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
		{"env pair without a named provider", flow.Provider{Vendor: "openai"}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "k-env"}, "openai", "env-model", "http://env/v1", "k-env", 0},
		{"explicit url never gets the env key", flow.Provider{Vendor: "openai", BaseURL: "http://mine/v1"}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_API_KEY": "k-env"}, "openai", "env-model", "http://mine/v1", "", 0},
		{"explicit beats env", flow.Provider{Model: "explicit", APIKey: "k-x"}, map[string]string{"OPENAI_DEFAULT_MODEL": "env-model", "OPENAI_API_KEY": "k-env"}, "openai", "explicit", "http://file/v1", "k-x", 77},
		{"named provider", flow.Provider{Name: "claude"}, map[string]string{"ANTHROPIC_API_KEY": "k-a"}, "anthropic", "file-claude", "", "k-a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flow.ResolveProviderConfig(tt.p, flow.ResolveOptions{Getenv: env(tt.env), ConfigPath: cfg, Models: rath.Models()})
			if err != nil {
				t.Fatal(err)
			}
			if got.Vendor != tt.kind || got.Model != tt.model || got.BaseURL != tt.base || got.APIKey != tt.key || got.MaxTokens != tt.maxTokens {
				t.Fatalf("got kind=%s model=%s base=%s key=%s max=%d", got.Vendor, got.Model, got.BaseURL, got.APIKey, got.MaxTokens)
			}
		})
	}
}

// A vendor of the program's own, registered next to the built-ins: the
// environment selects it by its prefix, its variables fill the provider,
// and its constructor builds the client. Without a registry only a
// provider with its own client resolves, and the error says what to do.
func TestResolveProvider_RegisteredVendor(t *testing.T) {
	var got model.Config
	models := rath.Models()
	models.Register(model.Vendor{Name: "farm", EnvPrefix: "FARM", New: func(c model.Config) (model.Client, error) {
		got = c
		return model.ClientFunc(func(context.Context, model.Request) (model.Response, error) { return model.Response{}, nil }), nil
	}})
	p, err := flow.ResolveProvider(flow.Provider{}, flow.ResolveOptions{ConfigPath: "-", Models: models,
		Getenv: env(map[string]string{"FARM_BASE_URL": "http://farm:9/v1", "FARM_API_KEY": "k-farm", "FARM_DEFAULT_MODEL": "llama"})})
	if err != nil {
		t.Fatal(err)
	}
	if p.Vendor != "farm" || got != (model.Config{Model: "llama", BaseURL: "http://farm:9/v1", APIKey: "k-farm"}) {
		t.Fatalf("resolved %s with %+v", p.Vendor, got)
	}
	// The built-ins come first: OPENAI_API_KEY wins over FARM_*.
	p, err = flow.ResolveProvider(flow.Provider{}, flow.ResolveOptions{ConfigPath: "-", Models: models,
		Getenv: env(map[string]string{"OPENAI_API_KEY": "k-o", "OPENAI_DEFAULT_MODEL": "m", "FARM_API_KEY": "k-farm"})})
	if err != nil || p.Vendor != "openai" {
		t.Fatalf("with both keys: %v, %v", p, err)
	}
	_, err = flow.ResolveProvider(flow.Provider{Vendor: "openai", Model: "m"}, flow.ResolveOptions{ConfigPath: "-", Getenv: env(nil)})
	if !errors.Is(err, flow.ErrProvider) || !strings.Contains(err.Error(), "ResolveOptions.Models") {
		t.Fatalf("without a registry: %v", err)
	}
	_, err = flow.ResolveProvider(flow.Provider{Vendor: "llama-farm", Model: "m"}, flow.ResolveOptions{ConfigPath: "-", Getenv: env(nil), Models: models})
	if !errors.Is(err, model.ErrUnknownVendor) || !strings.Contains(err.Error(), "farm") {
		t.Fatalf("an unknown vendor: %v", err)
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
		{"unknown kind", flow.Provider{Vendor: "llama-farm"}, filepath.Join(dir, "none.json")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := flow.ResolveProvider(tt.p, flow.ResolveOptions{Getenv: env(nil), ConfigPath: tt.cfg, Models: rath.Models()})
			if !errors.Is(err, flow.ErrProvider) {
				t.Fatalf("err = %v, want ErrProvider", err)
			}
		})
	}
}

// Backoffs in the config file read as duration strings, and still as
// numbers of nanoseconds; a bad string is an error naming the field.
func TestLoadConfig_RetryDurations(t *testing.T) {
	tests := []struct {
		name, retry  string
		initial, max time.Duration
		wantErr      string
	}{
		{"strings", `{"max_attempts": 2, "initial_backoff": "1s", "max_backoff": "1m30s"}`, time.Second, 90 * time.Second, ""},
		{"numbers", `{"initial_backoff": 250000000}`, 250 * time.Millisecond, 0, ""},
		{"bad string", `{"initial_backoff": "soon"}`, 0, 0, "retry.initial_backoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			cfg := `{"providers": {"p": {"kind": "openai", "retry": ` + tt.retry + `}}}`
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cf, err := flow.LoadConfig(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := cf.Providers["p"].Retry; r.InitialBackoff != tt.initial || r.MaxBackoff != tt.max {
				t.Fatalf("retry = %+v", r)
			}
		})
	}
}

// A malformed base URL is refused when the provider is resolved.
func TestResolveProviderConfig_MalformedBaseURL(t *testing.T) {
	for _, u := range []string{"localhost:8080/v1", "ftp://h/v1", "http://"} {
		_, err := flow.ResolveProviderConfig(flow.Provider{Vendor: "openai", BaseURL: u}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
		if !errors.Is(err, flow.ErrProvider) || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("%q: err = %v", u, err)
		}
	}
}

// A provider's base URL may carry credentials (https://user:pw@proxy/v1);
// the password is a secret like its key.
func TestConfigSecrets_BaseURLPassword(t *testing.T) {
	cf := flow.ConfigFile{Providers: map[string]flow.ProviderConfig{
		"proxy": {Vendor: "openai", BaseURL: "https://team:proxy-pw-789@llm.internal/v1"},
		"plain": {Vendor: "openai", BaseURL: "https://api.openai.com/v1"},
	}}
	var got []string
	for _, s := range flow.ConfigSecrets(cf, func(string) string { return "" }) {
		got = append(got, s.Name+"="+s.Value)
	}
	if want := "provider.proxy.base_url.password=team:proxy-pw-789@ provider.proxy.base_url.password=proxy-pw-789"; strings.Join(got, " ") != want {
		t.Fatalf("secrets %q, want %q", strings.Join(got, " "), want)
	}
}
