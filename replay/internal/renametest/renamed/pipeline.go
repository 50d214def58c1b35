package pipeline

import (
	"context"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// Pipeline runs its writer (once called the planner).
type Pipeline struct{ Writer flow.Workflow }

// Forward runs the writer.
func (p *Pipeline) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return flow.Forward(ctx, p.Writer, s)
}
