package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// LocalBackend is the name of the built-in backend: the memory kept in the
// event log with a BM25 index beside it ([Local]).
const LocalBackend = "local"

// BackendConfig selects and configures a memory backend: the config
// file's "memory" entry, a runtime's option, and the run parameter that
// lets a worker or a replay open the same backend. It never holds a
// secret: the key is read from the environment variable APIKeyEnv.
type BackendConfig struct {
	// Backend is the backend's name; empty means LocalBackend.
	Backend string `json:"backend,omitempty"`
	// URL is the server of a remote backend.
	URL string `json:"url,omitempty"`
	// APIKeyEnv names the environment variable holding the server's key.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// KeyHeader is how the key is sent: "bearer" (default) or "x-api-key".
	KeyHeader string `json:"key_header,omitempty"`
	// Account and User identify the tenant on a multi-tenant server.
	Account string `json:"account,omitempty"`
	User    string `json:"user,omitempty"`
	// CommitWaitMS bounds how long a commit polls the server's
	// extraction task (milliseconds); zero means the backend's default,
	// negative does not poll.
	CommitWaitMS int `json:"commit_wait_ms,omitempty"`
	// TimeoutMS bounds one request to the server; zero means the
	// backend's default.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// Name returns the backend's name, LocalBackend when unset.
func (c BackendConfig) Name() string {
	if c.Backend == "" {
		return LocalBackend
	}
	return c.Backend
}

// BackendEnv is what a backend may use to open a memory: the runtime's
// log, its local memory and its environment.
type BackendEnv struct {
	// Store is the runtime's event log, where every memory operation is
	// recorded.
	Store *eventlog.Store
	// Local opens (once) the runtime's local memory.
	Local func(context.Context) (*Local, error)
	// Getenv reads the environment (the key named by APIKeyEnv). Nil
	// reads nothing.
	Getenv func(string) string
	// AddSecret makes the runtime redact a value (a key) from everything
	// it writes. Nil adds nothing.
	AddSecret func(string)
}

// Backend opens memories of one kind. Open makes no request to a server:
// a replay opens the recorded backend with its server stopped and must
// not fail for it.
type Backend interface {
	Name() string
	Open(ctx context.Context, env BackendEnv, cfg BackendConfig) (Memory, error)
}

// BackendFunc adapts a name and a function to Backend.
func BackendFunc(name string, open func(ctx context.Context, env BackendEnv, cfg BackendConfig) (Memory, error)) Backend {
	return backendFunc{name: name, open: open}
}

type backendFunc struct {
	name string
	open func(ctx context.Context, env BackendEnv, cfg BackendConfig) (Memory, error)
}

func (b backendFunc) Name() string { return b.name }
func (b backendFunc) Open(ctx context.Context, env BackendEnv, cfg BackendConfig) (Memory, error) {
	return b.open(ctx, env, cfg)
}

// localBackend is the backend of the runtime's local memory.
var localBackend = BackendFunc(LocalBackend, func(ctx context.Context, env BackendEnv, cfg BackendConfig) (Memory, error) {
	if cfg.URL != "" || cfg.APIKeyEnv != "" {
		return nil, invalidf("backend %s takes no url or key", LocalBackend)
	}
	if env.Local == nil {
		return nil, invalidf("backend %s: the runtime has no local memory", LocalBackend)
	}
	return env.Local(ctx)
})

// ErrUnknownBackend is returned for a backend name no registry holds.
var ErrUnknownBackend = errors.New("memory: unknown backend")

// Registry holds memory backends by name, like sandbox and model
// registries. It is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex // protects m
	m  map[string]Backend
}

// NewRegistry returns a registry holding the local backend and bs.
func NewRegistry(bs ...Backend) *Registry {
	r := &Registry{m: map[string]Backend{LocalBackend: localBackend}}
	for _, b := range bs {
		r.m[b.Name()] = b
	}
	return r
}

// Register adds b, replacing a backend of the same name.
func (r *Registry) Register(b Backend) error {
	if b == nil || strings.TrimSpace(b.Name()) == "" {
		return invalidf("register: a backend needs a name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[b.Name()] = b
	return nil
}

// Names lists the registered backends, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Open opens the memory cfg selects. Errors: ErrUnknownBackend, or the
// backend's.
func (r *Registry) Open(ctx context.Context, env BackendEnv, cfg BackendConfig) (Memory, error) {
	r.mu.RLock()
	b, ok := r.m[cfg.Name()]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownBackend, cfg.Name(), strings.Join(r.Names(), ", "))
	}
	m, err := b.Open(ctx, env, cfg)
	if err != nil {
		return nil, fmt.Errorf("memory: open backend %s: %w", cfg.Name(), err)
	}
	return m, nil
}

// ErrBackend is matched by every *BackendError.
var ErrBackend = errors.New("memory: backend failed")

// BackendError is a failure of a remote backend's server (down, slow,
// refusing, answering nonsense) during a memory operation. An agent
// records it and goes on without that recall or commit; Err is the
// client's typed error.
type BackendError struct {
	Backend string
	Op      string
	Err     error
}

func (e *BackendError) Error() string {
	return fmt.Sprintf("memory: %s %s: %v", e.Backend, e.Op, e.Err)
}

// Unwrap returns the client's error and ErrBackend.
func (e *BackendError) Unwrap() []error { return []error{e.Err, ErrBackend} }

// CommitReplayer is implemented by a backend whose commit depends on a
// server's answers. A replay calls ReplayCommit instead of Commit: it
// rebuilds the commit's events from the session with the replayed code
// and takes what the server answered from the recorded event, making no
// request.
type CommitReplayer interface {
	ReplayCommit(ctx context.Context, ns string, s *session.Session, recorded *events.MemoryCommitted) ([]events.Payload, error)
}

// CheckNamespace returns ErrInvalid for a namespace no backend accepts.
func CheckNamespace(ns string) error { return checkNamespace(ns) }

// EventHit converts a hit to its recorded form.
func EventHit(h Hit) events.MemoryHit {
	return events.MemoryHit{ID: h.ID, Score: h.Score, Text: h.Text, URI: h.URI, Level: h.Level}
}

// BackendOf returns the backend name m records in its events: "" for the
// local memory, else what its BackendName method returns.
func BackendOf(m Memory) string {
	if n, ok := m.(interface{ BackendName() string }); ok {
		return n.BackendName()
	}
	return ""
}
