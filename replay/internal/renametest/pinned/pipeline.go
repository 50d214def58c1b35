package pipeline

import (
	"context"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// Pipeline runs its writer, recorded as the planner.
type Pipeline struct {
	Writer flow.Workflow `rath:"planner"`
}

// Forward runs the writer.
func (p *Pipeline) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return flow.Forward(ctx, p.Writer, s)
}
