package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// StatusCanceled is the status of a canceled run.
const StatusCanceled = "canceled"

// ErrFinished is returned by Cancel for a run that already ended.
var ErrFinished = errors.New("fleet: the run has already finished")

// Cancel ends a queued or running run: it takes the run's lease from
// whoever holds it (so the worker running it can append nothing more:
// its next append is fenced and it drops the run) and records the run as
// finished with status "canceled" and the reason. A tool call in flight
// on that worker is not interrupted, only its result is refused.
func Cancel(ctx context.Context, rt *rath.Runtime, run, reason string) error {
	st, err := submittedState(ctx, rt, run)
	if err != nil {
		return err
	}
	if st.Finished {
		return fmt.Errorf("%w: %s", ErrFinished, run)
	}
	who := "cancel"
	if u, err := user.Current(); err == nil {
		who = "cancel:" + u.Username
	} else if h, err := os.Hostname(); err == nil {
		who = "cancel:" + h
	}
	// On the lease clock (the database's on PostgreSQL): a canceling
	// machine whose clock is behind must not write a lease already over.
	at, err := now(ctx, rt, nil)
	if err != nil {
		return err
	}
	token := st.Lease.Token + 1
	if _, err := rt.Store().Append(ctx, events.LeaseStream(run), st.Lease.Version, events.RunLeased{Run: run, Worker: who, Token: token, ExpiresAt: at.Add(time.Hour).UnixNano()}); err != nil {
		return fmt.Errorf("fleet: cancel %s: %w", run, err)
	}
	lease := eventlog.Lease{Run: run, Token: token}
	if reason == "" {
		reason = "canceled"
	}
	f := &Fleet{rt: rt}
	return f.finishWith(ctx, lease, st, StatusCanceled, reason)
}

// finishWith records the run as started (if it was not) and finished
// with status and reason, under lease. A started run's stream holds its
// run.started alone until a run.finished closes it: the finish is
// appended at version 1, so a run that finished meanwhile is a conflict,
// not a second ending. Both are sealed under the run's subject, as the
// rest of its content: erasing the subject takes them and the run's row
// together (with no subject, under the run's own key).
func (f *Fleet) finishWith(ctx context.Context, lease eventlog.Lease, st projections.RunState, status, reason string) error {
	if st.Subject != "" {
		ctx = events.ContextWithSubject(ctx, st.Subject)
	}
	rec := f.rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: st.Run}, Lease: &lease})
	if !st.Started {
		if _, err := rec.Append(ctx, st.Run, eventlog.NoStream, events.RunStarted{Run: st.Run, Workflow: st.Workflow, InputSession: st.InputSession, Seed: st.Run, Params: st.Params, Tenant: events.TenantField(st.Tenant), Subject: st.Subject}); err != nil {
			return err
		}
	}
	_, err := rec.Append(ctx, st.Run, 1, events.RunFinished{Run: st.Run, Status: status, Error: reason})
	return err
}
