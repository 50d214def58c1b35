package pipeline

import (
	"context"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// Pipeline runs its planner.
type Pipeline struct{ Planner flow.Workflow }

// Forward runs the planner.
func (p *Pipeline) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return flow.Forward(ctx, p.Planner, s)
}
