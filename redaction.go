package rath

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ErrNothingToRedact is returned by Redact when what it names has no
// events (an unknown session, namespace or run).
var ErrNothingToRedact = errors.New("rath: nothing to redact")

// RedactOptions say what a redaction deletes: exactly one of Event,
// Session, Memory and Run, and who asks and why (both required).
type RedactOptions struct {
	Event   int64  // one event, by seq
	Session string // every event of the session's stream and its selector decisions
	Memory  string // every event of the memory namespace
	Run     string // every event the run wrote, and the decisions on its approval requests
	By      string
	Reason  string
}

// Redact deletes the payloads of the events opts names, keeping their
// leaves (eventlog.Store.Redact), then rebuilds what was derived from them:
// the SQL projections, and for a memory namespace the local memory index,
// so no copy of a deleted payload stays behind in a read model.
func (rt *Runtime) Redact(ctx context.Context, opts RedactOptions) (eventlog.RedactResult, error) {
	req := eventlog.RedactRequest{By: opts.By, Reason: opts.Reason}
	var n int
	for _, set := range []bool{opts.Event != 0, opts.Session != "", opts.Memory != "", opts.Run != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return eventlog.RedactResult{}, fmt.Errorf("rath: redact: name exactly one of an event, a session, a memory namespace and a run: %w", events.ErrInvalid)
	}
	var err error
	switch {
	case opts.Event != 0:
		req.Scope, req.Target, req.Seqs = "event", fmt.Sprint(opts.Event), []int64{opts.Event}
	case opts.Session != "":
		req.Scope, req.Target = "session", opts.Session
		req.Seqs, err = rt.seqsWhere(ctx, `stream = ? OR stream = ?`, opts.Session, events.DecisionStream(opts.Session))
	case opts.Memory != "":
		req.Scope, req.Target = "memory", opts.Memory
		req.Seqs, err = rt.seqsWhere(ctx, `stream = ?`, events.MemoryStream(opts.Memory))
	default:
		req.Scope, req.Target = "run", opts.Run
		// The decisions on its approval requests are written without its
		// id; a request deleted without its decision would leave a
		// decision of nothing.
		req.Seqs, err = rt.seqsWhere(ctx, `run_id = ? OR stream IN (SELECT stream FROM events WHERE run_id = ? AND type = ?)`, opts.Run, opts.Run, events.TypeApprovalRequested)
	}
	if err != nil {
		return eventlog.RedactResult{}, err
	}
	if len(req.Seqs) == 0 {
		return eventlog.RedactResult{}, fmt.Errorf("%w: %s %q has no events", ErrNothingToRedact, req.Scope, req.Target)
	}
	res, err := rt.store.Redact(ctx, req)
	if err != nil || len(res.Redacted) == 0 {
		return res, err
	}
	return res, rt.afterRedaction(ctx, opts.Memory != "")
}

// afterRedaction rebuilds the read models that may hold what was deleted.
func (rt *Runtime) afterRedaction(ctx context.Context, memory bool) error {
	if _, err := rt.Rebuild(ctx, nil); err != nil {
		return fmt.Errorf("rath: redacted, but rebuilding the projections failed (run rath rebuild): %w", err)
	}
	if !memory {
		return nil
	}
	m, err := rt.Memory(ctx)
	if err != nil {
		return fmt.Errorf("rath: redacted, but the memory index did not open (run rath rebuild --memory): %w", err)
	}
	if _, err := m.Rebuild(ctx); err != nil {
		return fmt.Errorf("rath: redacted, but rebuilding the memory index failed (run rath rebuild --memory): %w", err)
	}
	return nil
}

// seqsWhere lists the seqs of the events matching a condition, except
// the records of redactions.
func (rt *Runtime) seqsWhere(ctx context.Context, cond string, args ...any) ([]int64, error) {
	db := rt.store.DB()
	q := `SELECT seq FROM events WHERE (` + cond + `) AND type <> '` + strings.ReplaceAll(events.TypeEvidenceRedacted, "'", "''") + `' ORDER BY seq`
	var seqs []int64
	if err := db.SelectContext(ctx, &seqs, db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("rath: redact: list the events: %w", err)
	}
	return seqs, nil
}

// RedactEvents redacts the events of req (eventlog.Store.Redact) and then
// rebuilds the SQL projections, as Redact does; retention uses it.
func (rt *Runtime) RedactEvents(ctx context.Context, req eventlog.RedactRequest) (eventlog.RedactResult, error) {
	res, err := rt.store.Redact(ctx, req)
	if err != nil || len(res.Redacted) == 0 {
		return res, err
	}
	return res, rt.afterRedaction(ctx, false)
}
