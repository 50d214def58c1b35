package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// A run's root workflow records workflow.exited, and then the run records
// run.finished: two commits, though nothing happens between them and
// nobody waits for the first alone. A caller that records the run's end
// itself (rath's Runtime.Start) can take the root's exit record instead
// and write it with run.finished, in one commit, in the same order.

// DeferredExit holds the workflow.exited record of the first workflow
// entered under the context ContextDeferringExit returned, for the caller
// to write.
type DeferredExit struct {
	mu      sync.Mutex
	claimed bool
	has     bool
	path    string
	write   eventlog.Write
	before  *session.Session // the output handle without the record
	bodyErr error
}

type deferExitKey struct{}

// ContextDeferringExit returns a context under which the first workflow
// entered (the run's root) does not write its workflow.exited record: it
// returns the output handle as if it had, and leaves the write in the
// DeferredExit. The caller must write it (Write) or report its refusal
// (Refused). Workflows nested in the root record their exits as usual,
// and so does the root when its run is suspended (no exit is recorded).
func ContextDeferringExit(ctx context.Context) (context.Context, *DeferredExit) {
	d := &DeferredExit{}
	return context.WithValue(ctx, deferExitKey{}, d), d
}

// claimFor hands d to the first workflow entered under ctx.
func claimFor(ctx context.Context) *DeferredExit {
	d, _ := ctx.Value(deferExitKey{}).(*DeferredExit)
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claimed {
		return nil
	}
	d.claimed = true
	return d
}

// Write returns the root workflow's workflow.exited write, if its exit
// was deferred.
func (d *DeferredExit) Write() (eventlog.Write, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.write, d.has
}

// Refused returns what the root's Forward would have returned had its
// exit record failed with err (the write was refused: a stale output
// handle): the output handle without the record, and the body's error,
// or the record's failure when the body succeeded.
func (d *DeferredExit) Refused(err error) (*session.Session, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ce *eventlog.ConflictError
	if errors.As(err, &ce) && ce.Stream == d.write.Stream {
		err = fmt.Errorf("session: record on %s: %w", ce.Stream, &session.StaleError{ID: ce.Stream, Have: ce.Expected, Head: ce.Actual})
	}
	if d.bodyErr != nil {
		return d.before, d.bodyErr
	}
	return d.before, fmt.Errorf("flow: exit %s: %w", d.path, err)
}

// deferExit takes the exit record of the workflow at path, writing ev on
// target: it returns the handle the record would give (nil when out is).
func (d *DeferredExit) deferExit(path string, target, out *session.Session, ev events.WorkflowExited, bodyErr error) (*session.Session, error) {
	w, next, err := target.Pending(ev)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.has, d.path, d.write, d.before, d.bodyErr = true, path, w, out, bodyErr
	d.mu.Unlock()
	if out == nil {
		return nil, nil
	}
	return next, nil
}
