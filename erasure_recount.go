package rath

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// An erasure changes what a rebuild makes of every session an event
// sealed under the destroyed key touched: the session it started (its
// shape keeps no sandbox and no usage), the model calls it recorded
// (their usage rows and tokens go), the sandboxes it placed the session
// in. Other subjects' events in the same sessions stay. So the erasure
// recounts each such session from its stream, as a rebuild would once
// the key is gone, instead of clearing it: its row and its snapshots
// then equal a rebuild's however the subjects' events interleave, and
// a subject erased twice loses exactly what it wrote in between.
const (
	// The streams the key's session events and model calls are on.
	keyStreams = `SELECT DISTINCT e.stream FROM sealed_by_key k JOIN events e ON e.seq = k.seq
		WHERE k.key_id = ? AND k.type <> '` + events.TypeMemoryRemembered + `'`
	// The key's model calls leave the usage table: a rebuild makes no
	// row of a call it cannot open.
	dropKeyUsage = `DELETE FROM usage WHERE seq IN (SELECT seq FROM sealed_by_key WHERE key_id = ? AND type = '` +
		events.TypeProviderCalled + `')`
	sessionExists    = `SELECT COUNT(*) FROM sessions WHERE id = ?`
	sessionSnapshots = `SELECT seq FROM session_snapshots WHERE session = ? ORDER BY seq`
	recountSession   = `UPDATE sessions SET backend = ?, spec = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, calls = ?
		WHERE id = ?`
	recountSnapshot = `UPDATE session_snapshots SET backend = ?, spec = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, calls = ?
		WHERE session = ? AND seq = ?`
)

// recountedTypes are the events that set a session's sandbox and usage.
var recountedTypes = append(events.ShapedTypes(), events.TypeSessionPlaced, events.TypeProviderCalled)

// sandboxAndUsage is what an erasure recounts of a session: where its
// tools run and what its model calls cost.
type sandboxAndUsage struct {
	backend, spec string
	usage         events.Usage
}

// recounter recounts, in an erasure's transaction, the sessions the key
// keyID touched. It reads their events through the store, which still
// opens them (the key's row goes in the uncommitted transaction), and
// reads each as a rebuild will: one under keyID as erased.
type recounter struct {
	rt     *Runtime
	tx     *sql.Tx
	keyID  string
	rebind func(string) string
	shapes map[int64]events.Shape // the redactions' and erasures' shapes, read once needed
}

// recountUnderKey drops the key's usage rows and recounts the sessions
// its events touched.
func (rt *Runtime) recountUnderKey(ctx context.Context, tx *sql.Tx, keyID string) error {
	rb := rt.store.DB().Rebind
	r := &recounter{rt: rt, tx: tx, keyID: keyID, rebind: rb}
	rows, err := tx.QueryContext(ctx, rb(keyStreams), keyID)
	if err != nil {
		return err
	}
	var streams []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		streams = append(streams, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, rb(dropKeyUsage), keyID); err != nil {
		return err
	}
	for _, s := range streams {
		if err := r.recount(ctx, s); err != nil {
			return fmt.Errorf("recount session %s: %w", s, err)
		}
	}
	return nil
}

// recount sets session id's sandbox and usage, in its row and its
// snapshots, to what its stream makes of them without the key's events.
// A stream that is no session's (a selector's side stream, whose calls
// count in no session's total) has nothing to recount.
func (r *recounter) recount(ctx context.Context, id string) error {
	var n int
	if err := r.tx.QueryRowContext(ctx, r.rebind(sessionExists), id).Scan(&n); err != nil || n == 0 {
		return err
	}
	var snaps []int64
	if err := selectInts(ctx, r.tx, &snaps, r.rebind(sessionSnapshots), id); err != nil {
		return err
	}
	var cur sandboxAndUsage
	write := func(q string, args ...any) error {
		all := append([]any{cur.backend, cur.spec, cur.usage.PromptTokens, cur.usage.CompletionTokens, cur.usage.TotalTokens, cur.usage.Calls}, args...)
		_, err := r.tx.ExecContext(ctx, r.rebind(q), all...)
		return err
	}
	for ev, err := range r.rt.store.Scan(ctx, eventlog.Query{Stream: id, Types: recountedTypes}) {
		if err != nil {
			return err
		}
		// A snapshot holds the row as of its seq.
		for len(snaps) > 0 && snaps[0] < ev.Seq {
			if err := write(recountSnapshot, id, snaps[0]); err != nil {
				return err
			}
			snaps = snaps[1:]
		}
		p, err := r.asRebuilt(ctx, ev)
		if err != nil {
			return err
		}
		cur = nextSandboxAndUsage(cur, id, ev.Stream, p)
	}
	for _, seq := range snaps {
		if err := write(recountSnapshot, id, seq); err != nil {
			return err
		}
	}
	return write(recountSession, id)
}

// asRebuilt is the payload a rebuild after the erasure decodes of ev:
// nil for an event it cannot open (the key's, or one erased or redacted
// before) unless its shape was kept, then the shape.
func (r *recounter) asRebuilt(ctx context.Context, ev events.Event) (events.Payload, error) {
	if ev.SealedUnder.ID == r.keyID {
		sh, ok, err := events.ErasureShapeOf(ev.Seq, ev.Type, ev.TypeVersion, ev.Payload)
		if err != nil || !ok {
			return nil, err
		}
		return sh.Decode(ev.Type)
	}
	p, err := ev.Decode()
	if !errors.Is(err, events.ErrRedacted) {
		return p, err
	}
	if r.shapes == nil {
		if r.shapes, err = r.rt.store.Shapes(ctx); err != nil {
			return nil, err
		}
	}
	if sh, ok := r.shapes[ev.Seq]; ok {
		return sh.Decode(ev.Type)
	}
	return nil, nil
}

// nextSandboxAndUsage applies p, an event on stream, to session id's
// sandbox and usage as the projections do: the event that starts the
// session sets both, a placement the sandbox, a model call on the
// session's own stream adds its tokens and one call.
func nextSandboxAndUsage(cur sandboxAndUsage, id, stream string, p events.Payload) sandboxAndUsage {
	started := func(pl events.Placement, u events.Usage) sandboxAndUsage {
		return sandboxAndUsage{backend: pl.Backend, spec: pl.Spec, usage: u}
	}
	switch e := p.(type) {
	case *events.SessionCreated:
		if e.Session == id {
			return sandboxAndUsage{}
		}
	case *events.SessionForked:
		if e.Session == id {
			return started(e.Placement, e.Usage)
		}
	case *events.SessionDetached:
		if e.Session == id {
			return started(e.Placement, events.Usage{})
		}
	case *events.SessionMerged:
		if e.Session == id {
			return started(e.Placement, e.Usage)
		}
	case *events.SessionCompressed:
		if e.Session == id {
			return started(e.Placement, e.Usage)
		}
	case *events.SessionImported:
		if e.Session == id {
			return started(e.Placement, e.Usage)
		}
	case *events.SessionPlaced:
		if e.Session == id {
			cur.backend, cur.spec = e.Backend, e.Spec
		}
	case *events.ProviderCalled:
		if e.Session == id && stream == id {
			u := e.Usage
			u.Calls = 1
			cur.usage = cur.usage.Add(u)
		}
	}
	return cur
}
