package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Registry maps backend names to backends. It is a value the runtime owns:
// rath.Open fills one with the built-in backends and users add theirs, so
// two runtimes in one process can have different backends. There is no
// global registry and nothing registers itself at init.
//
// The zero value is an empty registry ready to use. A Registry is safe for
// concurrent use and must not be copied after first use.
type Registry struct {
	mu       sync.RWMutex // protects backends
	backends map[string]Backend
}

// NewRegistry returns a registry holding backends; it panics like Register.
func NewRegistry(backends ...Backend) *Registry {
	r := &Registry{}
	for _, b := range backends {
		r.Register(b)
	}
	return r
}

// Register adds b under b.Name(). It panics when b is nil, its name is
// empty, or the name is already registered: a duplicate is a wiring bug,
// and resolving it silently would make the winner depend on call order.
func (r *Registry) Register(b Backend) {
	if b == nil {
		panic("sandbox: Register of a nil backend")
	}
	name := b.Name()
	if name == "" {
		panic("sandbox: Register of a backend with an empty name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.backends[name]; dup {
		panic(fmt.Sprintf("sandbox: Register called twice for backend %q", name))
	}
	if r.backends == nil {
		r.backends = make(map[string]Backend)
	}
	r.backends[name] = b
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.backends))
	for name := range r.backends {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the backend registered under name, or an
// *UnknownBackendError (matching ErrUnknownBackend) that lists the
// registered names.
func (r *Registry) Lookup(name string) (Backend, error) {
	r.mu.RLock()
	b, ok := r.backends[name]
	r.mu.RUnlock()
	if !ok {
		return nil, &UnknownBackendError{Name: name, Known: r.Names()}
	}
	return b, nil
}

// Open looks up name and opens spec on it. The caller owns the sandbox and
// must Close it; use a [Pool] to share sandboxes between sessions.
func (r *Registry) Open(ctx context.Context, name, spec string) (Sandbox, error) {
	b, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	sb, err := b.Open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("open %s sandbox %q: %w", name, spec, err)
	}
	return sb, nil
}
