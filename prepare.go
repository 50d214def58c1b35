package rath

import (
	"context"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// PrepareUserSession builds, without writing it, a root session holding
// the user's text (redacted as NewUserSession's is), placed on backend
// with spec unless backend is empty. The caller appends its write in a
// transaction of its own (fleet.SubmitBatch writes many at once).
func (rt *Runtime) PrepareUserSession(ctx context.Context, text, backend, spec string) (session.Prepared, error) {
	return rt.sessions.PrepareNew(ctx, session.OriginUser, backend, spec, session.Chunk{Role: events.RoleUser, Content: rt.secrets.String(text)})
}
