package eventlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"github.com/gorath/rath/events"
)

// The writer's cache of run_leases tokens, and the fencing check it serves.

// forgetLease drops the cached token of the run a run.leased payload
// names, since its projection changes that run's row of run_leases; all
// of them if the payload does not say (it was erased, or is not one).
// Dropping every token at each lease taken anywhere in the fleet made the
// writer read a token again for most requests when several workers ran.
func (w *writerState) forgetLease(payload []byte) {
	var l struct {
		Run *string `json:"run"`
	}
	if json.Unmarshal(payload, &l) != nil || l.Run == nil {
		clear(w.leases)
		return
	}
	delete(w.leases, *l.Run)
}

// selectLeaseToken reads a run's current lease token.
const selectLeaseToken = `SELECT token FROM run_leases WHERE run = ?`

// checkLease refuses a fenced request whose token is no longer its run's
// current one, before it writes anything. It applies when the request
// writes the run's events (stamped with its id) or its lease stream.
// run_leases is the projection of run.leased (package projections).
func (w *writerState) checkLease(ctx context.Context, req *request) error {
	l := req.lease
	if l == nil {
		return nil
	}
	touches := req.runID == l.Run
	for _, pw := range req.writes {
		touches = touches || (len(pw.items) > 0 && pw.stream == events.LeaseStream(l.Run))
	}
	if !touches {
		return nil
	}
	current, cached := w.leases[l.Run]
	var err error
	if !cached {
		// A lease this batch wrote is among the projectors' queued
		// statements until they are sent: they go first, in the same
		// round trip.
		if w.pend.unsent() > 0 {
			err = w.queryRowAfterQueued(ctx, selectLeaseToken, []any{l.Run}, &current)
			if errors.Is(err, errQueuedFailed) {
				return storageErr("check lease", err)
			}
		} else {
			err = w.conn.QueryRowContext(ctx, w.s.rebind(selectLeaseToken), l.Run).Scan(&current)
		}
	}
	if err == nil && !cached {
		if w.leases == nil || len(w.leases) >= maxHeadCache {
			w.leases = map[string]int64{}
		}
		w.leases[l.Run] = current
	}
	if errors.Is(err, sql.ErrNoRows) {
		// No lease was ever recorded here (a replay's scratch store, which
		// mirrors the run's events but not its leases): nobody else can
		// hold the run.
		return nil
	}
	if err != nil {
		return storageErr("check lease", err)
	}
	if current != l.Token {
		return &FencedError{Run: l.Run, Token: l.Token, Current: current}
	}
	return nil
}
