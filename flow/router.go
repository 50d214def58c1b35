package flow

import (
	"context"
	"fmt"

	"github.com/gorath/rath/session"
)

// DefaultMaxSteps is a Router's step cap unless MaxSteps says otherwise.
const DefaultMaxSteps = 8

// Router is a Selector in a loop: the model picks one of the candidates,
// it runs on the session, and the model picks again, until it picks
// "none" (or MaxSteps steps ran: ErrMaxSteps). Each chosen candidate runs
// as a child named after it (root.write). Unlike a loop written in Go
// around Selector.Select, a Router is described by [Describe], so
// `rath replay` rebuilds it from the log.
type Router struct {
	Selector   *Selector
	Candidates []Candidate
	// MaxSteps caps the candidates run; zero means DefaultMaxSteps.
	MaxSteps int
	name     string
}

// NewRouter returns a Router choosing with sel among candidates.
func NewRouter(sel *Selector, candidates ...Candidate) *Router {
	return &Router{Selector: sel, Candidates: candidates}
}

// Name returns the path segment.
func (r *Router) Name() string { return r.name }

// SetName sets the path segment and returns r.
func (r *Router) SetName(name string) *Router { r.name = name; return r }

func (r *Router) recordsItself() bool { return true }

// Forward routes s until the model picks none.
func (r *Router) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return r.forwardAs(ctx, s, "")
}

func (r *Router) forwardAs(ctx context.Context, s *session.Session, hint string) (*session.Session, error) {
	if r.Selector == nil {
		return nil, fmt.Errorf("flow: router without a selector")
	}
	in := s
	ctx, s, path, err := enter(ctx, s, r, hint)
	if err != nil {
		return nil, err
	}
	steps := r.MaxSteps
	if steps <= 0 {
		steps = DefaultMaxSteps
	}
	for range steps {
		next, err := r.Selector.Select(ctx, s, r.Candidates...)
		if err != nil {
			return exit(ctx, path, in, s, err)
		}
		if next == Empty {
			return exit(ctx, path, in, s, nil)
		}
		out, err := forward(ctx, next, s, "")
		if out != nil {
			s = out
		}
		if err != nil {
			return exit(ctx, path, in, s, err)
		}
	}
	return exit(ctx, path, in, s, fmt.Errorf("%w: %s ran %d steps", ErrMaxSteps, path, steps))
}
