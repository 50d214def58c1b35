package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// A run's root workflow records workflow.entered, then its body's first
// event; at the end workflow.exited, and then the run records
// run.finished. Nothing happens between the first two nor between the
// last two, and nobody waits for the first of either pair alone: each
// pair can be one commit. A caller that records the run's start and end
// itself (rath's Runtime.Start) has the root's entry carried by the
// body's first append (events.ContextWithCarried) and takes its exit
// record, to write it with run.finished; the log holds the same events in
// the same order.

// DeferredExit holds the workflow.exited record of the first workflow
// entered under the context ContextDeferringExit returned, for the caller
// to write, and the carried write of its workflow.entered.
type DeferredExit struct {
	mu      sync.Mutex
	claimed bool
	has     bool
	path    string
	write   events.Write
	before  *session.Session // the output handle without the record
	bodyErr error
	entry   *events.Carried // the root's workflow.entered, carried
}

type deferExitKey struct{}

// ContextDeferringExit returns a context under which the first workflow
// entered (the run's root) has its workflow.entered carried by its body's
// first append, and does not write its workflow.exited record: it returns
// the output handle as if it had, and leaves the write in the
// DeferredExit. The caller must write it, after FlushEntry (which writes
// the entry if no append carried it), or report its refusal (Refused),
// and flush the entry if the run stops without an end. Workflows nested in
// the root record theirs as usual, and a suspended run records no exit.
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

// FlushEntry writes the root's entry on its own unless an append carried
// it (the run stops without an end: it waits for a person, or is left
// open for a retry), with what it nests in (run.started).
func (d *DeferredExit) FlushEntry(ctx context.Context, store *events.Store) error {
	d.mu.Lock()
	entry := d.entry
	d.mu.Unlock()
	if entry == nil {
		return nil
	}
	return entry.Flush(ctx, store)
}

// carryEntry carries the root's workflow.entered record ev on s from ctx:
// it returns the context that carries it and the handle as if it were
// written.
func (d *DeferredExit) carryEntry(ctx context.Context, s *session.Session, ev events.WorkflowEntered) (context.Context, *session.Session, error) {
	w, next, err := s.Pending(ev)
	if err != nil {
		return nil, nil, err
	}
	ctx, c, err := events.ContextWithCarried(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	d.entry = c
	d.mu.Unlock()
	return ctx, next, nil
}

// Write returns the root workflow's workflow.exited write, if its exit
// was deferred.
func (d *DeferredExit) Write() (events.Write, bool) {
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
	var ce *events.ConflictError
	if errors.As(err, &ce) && ce.Stream == d.write.Stream {
		err = fmt.Errorf("session: record on %s: %w", ce.Stream, &session.StaleError{ID: ce.Stream, Have: ce.Expected, Head: ce.Actual})
	}
	if d.bodyErr != nil {
		return d.before, d.bodyErr
	}
	return d.before, fmt.Errorf("flow: exit %s: %w", d.path, err)
}

// deferExit takes the exit record of the workflow at path, writing ev on
// target: it returns the handle the record would give. (A body that
// returned no output records its exit on its input handle, from before
// its entry, as it always has: that write is refused as stale and left
// out, so it is not deferred.)
func (d *DeferredExit) deferExit(path string, target, out *session.Session, ev events.WorkflowExited, bodyErr error) (*session.Session, error) {
	w, next, err := target.Pending(ev)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.has, d.path, d.write, d.before, d.bodyErr = true, path, w, out, bodyErr
	d.mu.Unlock()
	return next, nil
}
