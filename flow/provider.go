package flow

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/secret"
)

// The built-in model vendors' names.
const (
	VendorOpenAI    = "openai"
	VendorAnthropic = "anthropic"
	VendorScripted  = "scripted"
)

// Defaults for a Provider's retry policy.
const (
	DefaultMaxAttempts    = 4
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
)

// RetryPolicy says how failed model calls are retried: only retryable
// failures (429, 5xx, timeouts, connection resets), with exponential
// backoff and jitter, honouring a server's Retry-After.
type RetryPolicy struct {
	// MaxAttempts is the most attempts per call, the first included.
	// Zero means DefaultMaxAttempts; 1 disables retries.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// InitialBackoff is the wait before the second attempt; it doubles
	// each time. Zero means DefaultInitialBackoff.
	InitialBackoff time.Duration `json:"initial_backoff,omitempty"`
	// MaxBackoff caps one wait (and a Retry-After). Zero means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration `json:"max_backoff,omitempty"`
}

// UnmarshalJSON reads the backoffs as duration strings ("1s", "250ms")
// or, as before, as numbers of nanoseconds.
func (r *RetryPolicy) UnmarshalJSON(b []byte) error {
	var raw struct {
		MaxAttempts    int             `json:"max_attempts"`
		InitialBackoff json.RawMessage `json:"initial_backoff"`
		MaxBackoff     json.RawMessage `json:"max_backoff"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := RetryPolicy{MaxAttempts: raw.MaxAttempts}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *time.Duration
	}{{"initial_backoff", raw.InitialBackoff, &out.InitialBackoff}, {"max_backoff", raw.MaxBackoff, &out.MaxBackoff}} {
		d, err := parseDuration(f.raw)
		if err != nil {
			return fmt.Errorf("retry.%s: %w", f.name, err)
		}
		*f.dst = d
	}
	*r = out
	return nil
}

// parseDuration reads a JSON duration: a string for time.ParseDuration or
// a number of nanoseconds; null or absent is zero.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("want a duration such as \"1s\" or \"250ms\": %w", err)
		}
		return d, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("want a duration such as \"1s\", got %s", raw)
	}
	return time.Duration(n), nil
}

func (r RetryPolicy) withDefaults() RetryPolicy {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.InitialBackoff <= 0 {
		r.InitialBackoff = DefaultInitialBackoff
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = DefaultMaxBackoff
	}
	return r
}

// Budget stops a run that spends too much. Zero fields mean no limit. It
// counts every call made through one *Provider, by all agents sharing it.
type Budget struct {
	MaxTokens int64 `json:"max_tokens,omitempty"`
	MaxCalls  int64 `json:"max_calls,omitempty"`
}

// Provider says which model to call and how. Build one with
// ResolveProvider (or rath.NewProvider), which fill unset fields from the environment and the
// config file and construct the client. A *Provider is safe for
// concurrent use; its budget is shared by everything that uses it.
type Provider struct {
	// Name is the provider's name in the config file, if any.
	Name string `json:"name,omitempty"`
	// Vendor names the model vendor in ResolveOptions.Models: "openai"
	// (any OpenAI-compatible endpoint), "anthropic" or "scripted" (a
	// cassette) among the built-ins. Empty: from the config file (its
	// "kind"), else the first vendor whose PREFIX_API_KEY or
	// PREFIX_BASE_URL is set (OPENAI_, then ANTHROPIC_).
	Vendor  string `json:"kind,omitempty"`
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
	// APIKey is never recorded, logged or put in an error.
	APIKey string `json:"-"`
	// Cassette is the scripted cassette file (kind "scripted").
	Cassette string `json:"cassette,omitempty"`

	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int     `json:"seed,omitempty"`

	Retry  RetryPolicy `json:"retry"`
	Budget Budget      `json:"budget"`

	// Client, if set, is used as is instead of building one from Kind:
	// for tests and custom clients.
	Client model.Client `json:"-"`

	state *providerState
}

// providerState is shared by copies of a resolved Provider.
type providerState struct {
	client model.Client
	sleep  func(d time.Duration, done <-chan struct{}) bool

	mu     sync.Mutex // protects tokens and calls
	tokens int64
	calls  int64
}

// label names the provider in errors and events: never the key.
func (p *Provider) label() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Vendor
}

// Used returns the tokens and calls spent through this provider.
func (p *Provider) Used() (tokens, calls int64) {
	p.state.mu.Lock()
	defer p.state.mu.Unlock()
	return p.state.tokens, p.state.calls
}

// ConfigFile is the config file format: named providers and a default.
//
//	{"default": "local",
//	 "providers": {"local": {"kind": "openai", "base_url": "http://localhost:8000/v1",
//	                         "model": "qwen", "api_key_env": "LOCAL_KEY"}}}
type ConfigFile struct {
	Default   string                    `json:"default,omitempty"`
	Providers map[string]ProviderConfig `json:"providers"`
	// MCPServers are MCP servers by name, read by package flow/mcptool.
	MCPServers map[string]json.RawMessage `json:"mcp_servers,omitempty"`
	// Approvals are the approval rules `rath run` and `rath submit` give
	// their agent, after those of --approve.
	Approvals []ApprovalRule `json:"approvals,omitempty"`
	// Memory selects the memory backend of `rath memory` and of runs
	// given --memory; nil means the local memory.
	Memory *memory.BackendConfig `json:"memory,omitempty"`
	// Prices are what each model costs, by model name, for the console's
	// cost column; a model with no price shows no cost.
	Prices map[string]ModelPrice `json:"prices,omitempty"`
	// Agents are named agents, for `rath run --agent NAME`: the run
	// records the name and the settings it used, and `rath regress`
	// rebuilds a named agent's runs with the file's settings as they are
	// then, so an edited prompt shows which recorded runs it changes.
	Agents map[string]AgentConfig `json:"agents,omitempty"`
	// KEKFile is the key-encryption key file (rath keys kek) that seals
	// the store's content under per-subject keys (package keyring);
	// RATH_KEK_FILE overrides it. Empty means content is stored in clear.
	KEKFile string `json:"kek_file,omitempty"`
}

// AgentConfig is one named agent of the config file.
type AgentConfig struct {
	// System is the agent's system prompt; empty means the CLI's default.
	System string `json:"system,omitempty"`
}

// ModelPrice is a model's price per million tokens, in the currency the
// operator keeps accounts in.
type ModelPrice struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// ProviderConfig is one provider in the config file. The key is read from
// the environment variable APIKeyEnv; a literal APIKey works but is
// discouraged.
type ProviderConfig struct {
	Vendor      string      `json:"kind,omitempty"`
	Model       string      `json:"model,omitempty"`
	BaseURL     string      `json:"base_url,omitempty"`
	APIKey      string      `json:"api_key,omitempty"`
	APIKeyEnv   string      `json:"api_key_env,omitempty"`
	Cassette    string      `json:"cassette,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
	TopP        *float64    `json:"top_p,omitempty"`
	MaxTokens   int         `json:"max_tokens,omitempty"`
	Retry       RetryPolicy `json:"retry"`
	Budget      Budget      `json:"budget"`
}

// ResolveOptions say where ResolveProvider looks. Zero values mean the
// process environment and the default config path.
type ResolveOptions struct {
	// Getenv reads the environment. Nil means os.Getenv.
	Getenv func(string) string
	// ConfigPath is the config file. Empty means $RATH_HOME/config.json,
	// else ~/.rath/config.json. A missing file is not an error.
	ConfigPath string
	// Models builds clients by vendor name (the provider's Kind) and
	// says which environment variables each vendor reads. Nil: only a
	// provider with its own Client resolves. The rath runtime's registry
	// (rath.Models) has openai, anthropic and scripted.
	Models *model.Registry
}

// DefaultConfigPath returns $RATH_HOME/config.json or ~/.rath/config.json.
func DefaultConfigPath(getenv func(string) string) string {
	if h := getenv("RATH_HOME"); h != "" {
		return filepath.Join(h, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".rath", "config.json")
}

// LoadConfig reads a config file; a missing file gives an empty config.
func LoadConfig(path string) (ConfigFile, error) {
	var cf ConfigFile
	if path == "" {
		return cf, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return cf, fmt.Errorf("%w: read %s: %v", ErrProvider, path, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return cf, fmt.Errorf("%w: config file %s: %v", ErrProvider, path, err)
	}
	return cf, nil
}

// ResolveProvider fills p's unset fields, explicit fields first, then the
// selected provider of the config file, then the environment (each
// vendor's PREFIX_API_KEY, PREFIX_BASE_URL, PREFIX_DEFAULT_MODEL, like
// OPENAI_API_KEY), and builds the client with the vendor from
// opts.Models. The environment's key is used only with the
// environment's or the default base URL: a provider whose URL comes from
// the caller or the config file gets the caller's or the file's key, or
// none. Errors match ErrProvider.
func ResolveProvider(p Provider, opts ResolveOptions) (*Provider, error) {
	r, err := ResolveProviderConfig(p, opts)
	if err != nil {
		return nil, err
	}
	client := r.Client
	if client == nil {
		if client, err = newClient(&r, opts.Models); err != nil {
			return nil, err
		}
	}
	r.state = &providerState{client: client, sleep: sleep}
	return &r, nil
}

// ProviderParam is the run parameter (rath.WithParams) under which the
// rath CLI and demo record the provider a run resolved, as the JSON of
// [Provider.Recordable], so that a replay needs nothing but the log.
const ProviderParam = "resolved_provider"

// Recordable returns what a run records of p so that a replay can rebuild
// it with [FromRecord]: vendor, name, model, base URL, cassette, sampling,
// retry policy and budget. Never the key: APIKey and Client are dropped,
// and so are a base URL's user info and query, where keys also travel.
func (p *Provider) Recordable() Provider {
	r := Provider{Name: p.Name, Vendor: p.Vendor, Model: p.Model, BaseURL: p.BaseURL, Cassette: p.Cassette,
		Temperature: p.Temperature, TopP: p.TopP, MaxTokens: p.MaxTokens, Seed: p.Seed, Retry: p.Retry, Budget: p.Budget}
	if u, err := url.Parse(r.BaseURL); err == nil && (u.User != nil || u.RawQuery != "") {
		u.User, u.RawQuery, u.ForceQuery = nil, "", false
		r.BaseURL = u.String()
	}
	return r
}

// FromRecord returns the provider p describes (as [Provider.Recordable]
// gave it), answering with client, without reading the environment or a
// config file: a replay rebuilds the provider a run resolved on another
// machine, whatever this one would resolve today. Zero retry fields get
// their defaults, as with ResolveProvider.
func FromRecord(p Provider, client model.Client) *Provider {
	p.APIKey, p.Client = "", client
	p.Retry = p.Retry.withDefaults()
	p.state = &providerState{client: client, sleep: sleep}
	return &p
}

// ResolveProviderConfig fills p's unset fields as ResolveProvider does,
// without building a client.
func ResolveProviderConfig(p Provider, opts ResolveOptions) (Provider, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfgPath := opts.ConfigPath
	if cfgPath == "" {
		cfgPath = DefaultConfigPath(getenv)
	}
	cf, err := LoadConfig(cfgPath)
	if err != nil {
		return p, err
	}
	var fromFile ProviderConfig
	name := p.Name
	if name == "" && p.Vendor == "" && p.Client == nil {
		name = cf.Default
	}
	if name != "" {
		pc, ok := cf.Providers[name]
		if !ok && p.Name != "" {
			return p, fmt.Errorf("%w: no provider %q in %s", ErrProvider, name, cfgPath)
		}
		fromFile = pc
		if ok {
			// The file's default, named: a run records it (Recordable), so
			// that going on live later (a resume, regress --live) resolves
			// the same entry rather than the vendor's defaults.
			p.Name = name
		}
	}
	if p.Vendor == "" {
		p.Vendor = fromFile.Vendor
	}
	var vendors []model.Vendor
	if opts.Models != nil {
		vendors = opts.Models.Vendors()
	}
	if p.Vendor == "" && p.Client == nil {
		// The first vendor, in registration order, whose key or URL the
		// environment sets.
		for _, v := range vendors {
			if v.EnvPrefix != "" && (getenv(v.EnvPrefix+"_API_KEY") != "" || getenv(v.EnvPrefix+"_BASE_URL") != "") {
				p.Vendor = v.Name
				break
			}
		}
	}
	prefix := ""
	for _, v := range vendors {
		if v.Name == p.Vendor {
			prefix = v.EnvPrefix
		}
	}
	envVar := func(name string) string {
		if prefix == "" {
			return ""
		}
		return getenv(prefix + name)
	}
	// The endpoint (base URL and key) is resolved as a pair, so a key is
	// only sent to the URL it belongs to: the environment's key goes with
	// the environment's (or the kind's default) URL, never with a URL
	// from the config file or the caller. A named provider that sets its
	// own base_url or key ignores OPENAI_*/ANTHROPIC_* entirely.
	fileKey := fromFile.APIKey
	if fromFile.APIKeyEnv != "" {
		fileKey = getenv(fromFile.APIKeyEnv)
	}
	fileEndpoint := fromFile.BaseURL != "" || fromFile.APIKey != "" || fromFile.APIKeyEnv != ""
	urlFromEnv := p.BaseURL == "" && fromFile.BaseURL == ""
	if p.BaseURL == "" {
		p.BaseURL = fromFile.BaseURL
	}
	if p.BaseURL == "" && !fileEndpoint {
		p.BaseURL = envVar("_BASE_URL")
	}
	if p.APIKey == "" {
		p.APIKey = fileKey
	}
	if p.APIKey == "" && urlFromEnv && !fileEndpoint {
		p.APIKey = envVar("_API_KEY")
	}
	if p.Model == "" {
		p.Model = fromFile.Model
	}
	if p.Model == "" {
		p.Model = envVar("_DEFAULT_MODEL")
	}
	if p.Cassette == "" {
		p.Cassette = fromFile.Cassette
	}
	if p.Temperature == nil {
		p.Temperature = fromFile.Temperature
	}
	if p.TopP == nil {
		p.TopP = fromFile.TopP
	}
	if p.MaxTokens == 0 {
		p.MaxTokens = fromFile.MaxTokens
	}
	if p.Retry == (RetryPolicy{}) {
		p.Retry = fromFile.Retry
	}
	if p.Budget == (Budget{}) {
		p.Budget = fromFile.Budget
	}
	p.Retry = p.Retry.withDefaults()
	if p.Client != nil && p.Vendor == "" {
		p.Vendor = "custom"
	}
	if p.Vendor == "" {
		var keys []string
		for _, v := range vendors {
			if v.EnvPrefix != "" {
				keys = append(keys, v.EnvPrefix+"_API_KEY")
			}
		}
		if len(keys) == 0 {
			return p, fmt.Errorf("%w: no model registry to pick a vendor from the environment, and no default provider in %s", ErrNoProviderKind, cfgPath)
		}
		return p, fmt.Errorf("%w: set %s, or a default provider in %s", ErrNoProviderKind, strings.Join(keys, " or "), cfgPath)
	}
	if p.BaseURL != "" {
		// A malformed URL would otherwise fail every call as a
		// connection error, retried to the end.
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return p, fmt.Errorf("%w: the base URL of provider %s is malformed: want http://HOST[:PORT]/PATH or https://…", ErrProvider, cmp.Or(p.Name, p.Vendor))
		}
	}
	return p, nil
}

// ErrNoProviderKind is returned when nothing says which kind of model
// provider to use. It matches ErrProvider.
var ErrNoProviderKind = fmt.Errorf("%w: no model provider", ErrProvider)

// sleep waits d or until done closes; it reports whether it waited fully.
func sleep(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// ConfigSecrets returns the provider keys a config file holds or names:
// literal api_key values and the values of the api_key_env variables.
func ConfigSecrets(cf ConfigFile, getenv func(string) string) []secret.Secret {
	var out []secret.Secret
	for _, name := range slices.Sorted(maps.Keys(cf.Providers)) {
		pc := cf.Providers[name]
		if pc.APIKey != "" {
			out = append(out, secret.Secret{Name: "provider." + name + ".api_key", Value: pc.APIKey})
		}
		if pc.APIKeyEnv != "" {
			if v := getenv(pc.APIKeyEnv); v != "" {
				out = append(out, secret.Secret{Name: pc.APIKeyEnv, Value: v})
			}
		}
		out = append(out, secret.FromDSN("provider."+name+".base_url", pc.BaseURL)...)
	}
	return out
}
