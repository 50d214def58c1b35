package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/projections"
)

// WorkerInfo is one worker process of the fleet as its heartbeats and the
// run leases show it.
type WorkerInfo struct {
	ID          string    `json:"id"`
	Queue       string    `json:"queue"`
	Concurrency int       `json:"concurrency"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Live is false once the worker's own DeadAfter passed without a
	// heartbeat, which is when its peers judge it dead, expire its
	// leases and take its runs over: the list agrees with the fleet.
	Live bool `json:"live"`
	// Runs are the runs it holds a live lease on.
	Runs []string `json:"runs"`
}

// Workers lists the fleet's workers, idle ones too, with the runs each
// holds; with all, also those that stopped beating (dead or stopped
// without a goodbye) in the last day.
func Workers(ctx context.Context, rt *rath.Runtime, all bool) ([]WorkerInfo, error) {
	db := rt.Store().DB()
	var rows []struct {
		ID          string `db:"id"`
		Queue       string `db:"queue"`
		Concurrency int    `db:"concurrency"`
		DeadAfterMS int64  `db:"dead_after_ms"`
		StartedAt   int64  `db:"started_at"`
		HeartbeatAt int64  `db:"heartbeat_at"`
	}
	now, err := now(ctx, rt, nil)
	if err != nil {
		return nil, err
	}
	if err := db.SelectContext(ctx, &rows, db.Rebind(`SELECT id, queue, concurrency, dead_after_ms, started_at, heartbeat_at
		FROM fleet_workers WHERE heartbeat_at > ? ORDER BY id`), now.Add(-24*time.Hour).UnixNano()); err != nil {
		return nil, fmt.Errorf("fleet: list workers: %w", err)
	}
	// The live leases of the runs not finished: not every lease the
	// store ever had. (LiveLeases keeps those expiring after its time; a
	// lease expiring at now still counts as held.)
	leases, err := rt.Reader().LiveLeases(ctx, now.UnixNano()-1)
	if err != nil {
		return nil, err
	}
	held := map[string][]string{}
	for _, l := range leases {
		if l.Status == projections.RunQueued || l.Status == projections.RunRunning {
			held[l.Worker] = append(held[l.Worker], l.Run)
		}
	}
	out := []WorkerInfo{}
	for _, r := range rows {
		w := WorkerInfo{ID: r.ID, Queue: r.Queue, Concurrency: r.Concurrency, StartedAt: time.Unix(0, r.StartedAt).UTC(),
			HeartbeatAt: time.Unix(0, r.HeartbeatAt).UTC(), Runs: held[r.ID]}
		deadAfter := time.Duration(r.DeadAfterMS) * time.Millisecond
		if deadAfter <= 0 {
			// Registered before workers stored their own (migration
			// 00012): judged by the default, as their peers would.
			deadAfter = DefaultDeadAfter
		}
		w.Live = now.Sub(w.HeartbeatAt) < deadAfter
		if w.Runs == nil {
			w.Runs = []string{}
		}
		if w.Live || all {
			out = append(out, w)
		}
	}
	return out, nil
}

// heartbeat beats every fifth of DeadAfter until ctx ends.
func (f *Fleet) heartbeat(ctx context.Context, started time.Time) {
	t := time.NewTicker(max(f.opts.DeadAfter/5, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := f.beat(ctx, started); err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: heartbeat", "err", err)
		}
	}
}

// deadWorkers are the workers other than this one whose last heartbeat
// is older than their DeadAfter at at, with when it was. Each worker's
// own DeadAfter judges it (it beats every fifth of that), so workers
// started with different ones agree on which of them is dead; a row
// without one (a worker older than the column) is judged by this
// worker's.
func (f *Fleet) deadWorkers(ctx context.Context, at time.Time) (map[string]time.Time, error) {
	q := f.rt.Store().DB().Rebind(`SELECT id, heartbeat_at, dead_after_ms FROM fleet_workers WHERE heartbeat_at > ? AND id <> ?`)
	rows, err := f.db.QueryContext(ctx, q, at.Add(-24*time.Hour).UnixNano(), f.opts.WorkerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var beat, deadMS int64
		if err := rows.Scan(&id, &beat, &deadMS); err != nil {
			return nil, err
		}
		bound := time.Duration(deadMS) * time.Millisecond
		if bound <= 0 {
			bound = f.opts.DeadAfter
		}
		if beat < at.Add(-bound).UnixNano() {
			out[id] = time.Unix(0, beat)
		}
	}
	return out, rows.Err()
}

// beat records this worker's heartbeat (the first one registers it), on
// the lease clock. The clock is read in the statement itself (the
// store's NowSQL) rather than by a query of its own: on PostgreSQL a
// beat is one statement, every fifth of DeadAfter, from every worker.
func (f *Fleet) beat(ctx context.Context, started time.Time) error {
	store := f.rt.Store()
	at, atArgs := store.NowSQL(f.opts.Clock)
	q := store.DB().Rebind(`INSERT INTO fleet_workers (id, queue, concurrency, lease_ms, dead_after_ms, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ` + at + `)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`)
	args := append([]any{f.opts.WorkerID, f.opts.Queue, f.opts.Concurrency, f.opts.LeaseTime.Milliseconds(), f.opts.DeadAfter.Milliseconds(), started.UnixNano()}, atArgs...)
	_, err := f.db.ExecContext(ctx, q, args...)
	return err
}

// goodbye removes this worker's row when it stops cleanly.
func (f *Fleet) goodbye(ctx context.Context) error {
	_, err := f.db.ExecContext(ctx, f.rt.Store().DB().Rebind(`DELETE FROM fleet_workers WHERE id = ?`), f.opts.WorkerID)
	return err
}
