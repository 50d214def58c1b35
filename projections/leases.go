package projections

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// A fleet worker's reaper reads leases every half second; a store keeps a
// lease row for every run it ever leased, finished ones included (the
// last token fences a stale holder). So the reaper's reads start from the
// runs not finished, which the partial index runs_unfinished holds
// (migration 00028), and their cost follows the runs in flight, not the
// store's history.

// unfinishedRun is runs_unfinished's predicate, spelled as the index
// spells it: SQLite uses a partial index only for a query that has its
// term.
const unfinishedRun = `r.status IN ('` + RunQueued + `', '` + RunRunning + `', '` + RunWaiting + `')`

// leaseCols are a LeaseRow's columns, of run_leases l.
const leaseCols = `l.run, l.worker, l.token, l.expires_at, l.seq, l.version, l.taken_at`

// The reaper's queries: from the runs not finished to their leases.
const (
	expiredLeasesQuery = `SELECT l.run FROM runs r JOIN run_leases l ON l.run = r.id
		WHERE ` + unfinishedRun + ` AND r.status <> '` + RunWaiting + `' AND l.expires_at < ? ORDER BY l.run`
	liveLeasesQuery = `SELECT ` + leaseCols + `, r.status FROM runs r JOIN run_leases l ON l.run = r.id
		WHERE ` + unfinishedRun + ` AND l.expires_at > ? ORDER BY l.run`
)

// ExpiredLeases lists, in id order, the runs queued or running whose
// last lease expired before nanos (Unix nanoseconds): their holder is
// gone, and a fleet worker may take them over. A run waiting for a
// person is not among them: no one can continue it until it is decided.
func (r *Reader) ExpiredLeases(ctx context.Context, nanos int64) ([]string, error) {
	var runs []string
	err := r.db.SelectContext(ctx, &runs, r.db.Rebind(expiredLeasesQuery), nanos)
	if err != nil {
		return nil, fmt.Errorf("projections: expired leases: %w", err)
	}
	return runs, nil
}

// LiveLease is a lease that has not expired, with its run's status.
type LiveLease struct {
	LeaseRow
	Status string `db:"status"` // RunQueued, RunRunning or RunWaiting
}

// LiveLeases returns, in run order, the leases of the runs not finished
// (queued, running or waiting for a person) that expire after nanos.
func (r *Reader) LiveLeases(ctx context.Context, nanos int64) ([]LiveLease, error) {
	var ls []LiveLease
	err := r.db.SelectContext(ctx, &ls, r.db.Rebind(liveLeasesQuery), nanos)
	if err != nil {
		return nil, fmt.Errorf("projections: live leases: %w", err)
	}
	return ls, nil
}

// LeasesOf returns the leases of runs, those that have one, in run
// order.
func (r *Reader) LeasesOf(ctx context.Context, runs []string) ([]LeaseRow, error) {
	var out []LeaseRow
	const page = 500 // under SQLite's host parameter limit
	for len(runs) > 0 {
		n := min(page, len(runs))
		q, args, err := sqlx.In(`SELECT `+leaseCols+` FROM run_leases l WHERE l.run IN (?) ORDER BY l.run`, runs[:n])
		if err != nil {
			return nil, fmt.Errorf("projections: leases: %w", err)
		}
		var ls []LeaseRow
		if err := r.db.SelectContext(ctx, &ls, r.db.Rebind(q), args...); err != nil {
			return nil, fmt.Errorf("projections: leases: %w", err)
		}
		out = append(out, ls...)
		runs = runs[n:]
	}
	slices.SortFunc(out, func(a, b LeaseRow) int { return strings.Compare(a.Run, b.Run) })
	return out, nil
}
