package flow

import (
	"context"

	"github.com/gorath/rath/session"
)

// memoryConfig is wired when the memory layer lands; until then agents
// run without memory.
type memoryConfig struct{}

func (a *Agent) recall(ctx context.Context, s *session.Session, path string) (*session.Session, error) {
	return s, nil
}

func (a *Agent) commit(ctx context.Context, s *session.Session, path string) (*session.Session, error) {
	return s, nil
}
