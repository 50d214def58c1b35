package model

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Config is what a vendor needs to build a client: the resolved settings
// of a provider (package flow resolves them from the caller, the config
// file and the environment).
type Config struct {
	Model   string
	BaseURL string // empty: the vendor's default endpoint
	APIKey  string // never logged or put in an error
	// MaxTokens is the default completion limit (vendors that need one).
	MaxTokens int
	// Cassette is a scripted vendor's file.
	Cassette string
}

// Vendor is one kind of model service: its name (the provider's kind in
// the config file, "openai"), the prefix of its environment variables
// (PREFIX_API_KEY, PREFIX_BASE_URL, PREFIX_DEFAULT_MODEL; empty for none)
// and how to build a client from a Config.
type Vendor struct {
	Name      string
	EnvPrefix string
	New       func(Config) (Client, error)
}

// ErrUnknownVendor is matched by the error for a vendor name no registry
// entry has.
var ErrUnknownVendor = errors.New("model: unknown vendor")

// Registry maps vendor names to vendors. It is a value its owner fills
// (the rath runtime fills one with openai, anthropic and scripted; a
// program adds its own), not a global list: two runtimes in one process
// can know different vendors. The zero value is empty and ready to use;
// a Registry is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex // protects vendors and order
	vendors map[string]Vendor
	order   []string // registration order: the environment is probed in it
}

// NewRegistry returns a registry holding vendors; it panics like Register.
func NewRegistry(vendors ...Vendor) *Registry {
	r := &Registry{}
	for _, v := range vendors {
		r.Register(v)
	}
	return r
}

// Register adds a vendor. A vendor without a name or a constructor, or a
// name registered twice, is a programming error and panics, as
// sql.Register does.
func (r *Registry) Register(v Vendor) {
	if v.Name == "" || v.New == nil {
		panic("model: Register needs a vendor with a name and New")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.vendors[v.Name]; dup {
		panic("model: vendor " + v.Name + " registered twice")
	}
	if r.vendors == nil {
		r.vendors = map[string]Vendor{}
	}
	r.vendors[v.Name] = v
	r.order = append(r.order, v.Name)
}

// Lookup returns the named vendor; the error matches ErrUnknownVendor and
// lists the known ones.
func (r *Registry) Lookup(name string) (Vendor, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v, ok := r.vendors[name]; ok {
		return v, nil
	}
	names := slices.Clone(r.order)
	sort.Strings(names)
	return Vendor{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownVendor, name, names)
}

// Vendors returns the vendors in registration order.
func (r *Registry) Vendors() []Vendor {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Vendor, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.vendors[n])
	}
	return out
}

// New builds a client of the named vendor.
func (r *Registry) New(name string, cfg Config) (Client, error) {
	v, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	return v.New(cfg)
}
