package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
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
	store := rt.Store()
	sub, err := submitted(ctx, store, run)
	if err != nil {
		return err
	}
	state, err := runState(ctx, store, run)
	if err != nil {
		return err
	}
	if state.finished {
		return fmt.Errorf("%w: %s", ErrFinished, run)
	}
	evs, err := store.ReadStream(ctx, events.LeaseStream(run), 1)
	if err != nil {
		return err
	}
	token := int64(1)
	if n := len(evs); n > 0 {
		p, err := evs[n-1].Decode()
		if err != nil {
			return err
		}
		token = p.(*events.RunLeased).Token + 1
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
	if _, err := store.Append(ctx, events.LeaseStream(run), int64(len(evs)), events.RunLeased{Run: run, Worker: who, Token: token, ExpiresAt: at.Add(time.Hour).UnixNano()}); err != nil {
		return fmt.Errorf("fleet: cancel %s: %w", run, err)
	}
	lease := events.Lease{Run: run, Token: token}
	if reason == "" {
		reason = "canceled"
	}
	f := &Fleet{rt: rt}
	return f.finishWith(ctx, lease, sub, state, StatusCanceled, reason)
}

// finishWith records the run as started (if it was not) and finished
// with status and reason, under lease.
func (f *Fleet) finishWith(ctx context.Context, lease events.Lease, sub *events.RunSubmitted, state runStatus, status, reason string) error {
	lctx := events.ContextWithLease(events.ContextWithRun(ctx, events.RunRef{ID: sub.Run}), lease)
	store := f.rt.Store()
	version := int64(1)
	if !state.started {
		if _, err := store.Append(lctx, sub.Run, events.NoStream, events.RunStarted{Run: sub.Run, Workflow: sub.Workflow, InputSession: sub.InputSession, Seed: sub.Run, Params: sub.Params}); err != nil {
			return err
		}
	} else if v, err := store.StreamVersion(ctx, sub.Run); err == nil {
		version = v
	}
	_, err := store.Append(lctx, sub.Run, version, events.RunFinished{Run: sub.Run, Status: status, Error: reason})
	return err
}
