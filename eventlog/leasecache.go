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
	if w.opt.open {
		return w.checkLeaseLate(ctx, l, current, cached)
	}
	var err error
	if !cached {
		// A lease this batch wrote is among the projectors' queued
		// statements until they are sent: they go first, in the same
		// round trip.
		err = w.queryRow(ctx, selectLeaseToken, []any{l.Run}, &current)
	}
	return w.judgeLease(l, current, cached, err)
}

// judgeLease caches the token read for l's run (unless cached) and
// refuses l if it is not the current one.
func (w *writerState) judgeLease(l *Lease, current int64, cached bool, err error) error {
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

// leaseKey is a run's lease token, as leaseConfirm confirms it.
type leaseKey struct {
	run   string
	token int64
}

// checkLeaseLate is checkLease in a transaction sequenced at its end
// (sequencer.go), where the cache may be stale (nothing folds other
// processes' leases into it before the lock) and a read may come before
// the lock. A token that matches is confirmed after the lock, in the
// batch's pipeline (leaseConfirm: if another worker took the run since,
// the batch fails and is redone the usual way, which refuses it). A
// refusal is decided only on a read made after the lock.
func (w *writerState) checkLeaseLate(ctx context.Context, l *Lease, current int64, cached bool) error {
	if cached && current == l.Token {
		// Once a transaction: after the lock only this batch's own
		// writes move a lease, and a token they moved is another pair.
		key := leaseKey{l.Run, l.Token}
		if !w.leasesConfirmed[key] {
			if w.leasesConfirmed == nil {
				w.leasesConfirmed = map[leaseKey]bool{}
			}
			w.leasesConfirmed[key] = true
			w.pend.queued = append(w.pend.queued, queuedStmt{query: leaseConfirm, args: []any{l.Run, l.Token}})
		}
		return nil
	}
	// Read after the lock: queued behind it (and behind the batch's own
	// writes, a lease this batch wrote among them).
	err := w.queryRowAfterQueued(ctx, selectLeaseToken, []any{l.Run}, &current)
	if errors.Is(err, errQueuedFailed) {
		return storageErr("check lease", err)
	}
	return w.judgeLease(l, current, false, err)
}
