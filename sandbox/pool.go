package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/gorath/rath/events"
)

// Pool opens sandboxes on demand and shares them: every session whose
// placement has the same (backend, spec) gets the same Sandbox, opened on
// the first Get. The runtime owns one Pool and closes it when it closes.
//
// Sandboxes returned by Get belong to the pool: callers must not Close
// them. A Pool is safe for concurrent use; concurrent first calls for one
// placement open it once.
type Pool struct {
	reg   *Registry
	check func(events.Placement) error // nil: every placement may open

	mu     sync.Mutex // protects following fields
	open   map[events.Placement]*poolEntry
	closed bool
}

// poolEntry is one placement's sandbox; ready is closed once sb or err is
// set, so concurrent first callers wait for a single Open.
type poolEntry struct {
	ready chan struct{}
	sb    Sandbox
	err   error
}

// PoolOption configures NewPool.
type PoolOption func(*Pool)

// WithPlacementCheck makes Get refuse, with check's error, a placement
// check rejects (after any remap, before the backend opens it): the
// runtime uses it to keep a sandbox off its own store.
func WithPlacementCheck(check func(events.Placement) error) PoolOption {
	return func(p *Pool) { p.check = check }
}

// NewPool returns an empty pool resolving backends in reg.
func NewPool(reg *Registry, opts ...PoolOption) *Pool {
	p := &Pool{reg: reg, open: make(map[events.Placement]*poolEntry)}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Get returns the sandbox for placement, opening it if this is the first
// call. ctx bounds the opening (and the wait for another caller's opening),
// not the sandbox's life. A failed opening is not remembered: the next Get
// tries again.
//
// Errors: ErrNoPlacement for an empty backend name, an
// *UnknownBackendError, ErrClosed after Close, or the backend's Open error.
func (p *Pool) Get(ctx context.Context, placement events.Placement) (Sandbox, error) {
	if placement.Backend == "" {
		return nil, ErrNoPlacement
	}
	if m, ok := ctx.Value(remapKey{}).(map[events.Placement]events.Placement); ok {
		if to, ok := m[placement]; ok {
			placement = to
		}
	}
	if p.check != nil {
		if err := p.check(placement); err != nil {
			return nil, err
		}
	}
	b, err := p.reg.Lookup(placement.Backend)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	e, found := p.open[placement]
	if !found {
		e = &poolEntry{ready: make(chan struct{})}
		p.open[placement] = e
	}
	p.mu.Unlock()

	if found {
		select {
		case <-e.ready:
			return e.sb, e.err
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s sandbox %q: %w", placement.Backend, placement.Spec, ctx.Err())
		}
	}

	e.sb, e.err = b.Open(ctx, placement.Spec)
	if e.err != nil {
		e.err = fmt.Errorf("open %s sandbox %q: %w", placement.Backend, placement.Spec, e.err)
		p.mu.Lock()
		if p.open[placement] == e {
			delete(p.open, placement)
		}
		p.mu.Unlock()
	}
	close(e.ready)
	return e.sb, e.err
}

// Placements returns the placements with an open sandbox, sorted by backend
// then spec.
func (p *Pool) Placements() []events.Placement {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []events.Placement
	for pl, e := range p.open {
		select {
		case <-e.ready:
			if e.err == nil {
				out = append(out, pl)
			}
		default:
		}
	}
	slices.SortFunc(out, comparePlacements)
	return out
}

func comparePlacements(a, b events.Placement) int {
	if c := cmp.Compare(a.Backend, b.Backend); c != 0 {
		return c
	}
	return cmp.Compare(a.Spec, b.Spec)
}

// Close closes every sandbox the pool opened, waiting for openings still
// in progress, and returns their errors joined. Later Gets fail with
// ErrClosed; a second Close returns nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	entries := p.open
	p.open = nil
	p.mu.Unlock()

	// Close in a fixed order so the joined error reads the same every time.
	order := slices.SortedFunc(maps.Keys(entries), comparePlacements)
	var errs []error
	for _, pl := range order {
		e := entries[pl]
		<-e.ready
		if e.sb == nil {
			continue
		}
		if err := e.sb.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s sandbox %q: %w", pl.Backend, pl.Spec, err))
		}
	}
	return errors.Join(errs...)
}

type remapKey struct{}

// WithRemap returns a context in which Pool.Get opens the sandbox of
// remap[placement] in place of placement's own: a replay with live tools
// runs them in a copy of the recorded workspace without changing the
// placements it records.
func WithRemap(ctx context.Context, remap map[events.Placement]events.Placement) context.Context {
	return context.WithValue(ctx, remapKey{}, remap)
}
