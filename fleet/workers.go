package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath"
)

// WorkerInfo is one worker process of the fleet as its heartbeats and the
// run leases show it.
type WorkerInfo struct {
	ID          string    `json:"id"`
	Queue       string    `json:"queue"`
	Concurrency int       `json:"concurrency"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Live is false once a lease time passed without a heartbeat: the
	// worker died or lost the store, and its runs are taken over.
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
		LeaseMS     int64  `db:"lease_ms"`
		StartedAt   int64  `db:"started_at"`
		HeartbeatAt int64  `db:"heartbeat_at"`
	}
	now := time.Now()
	if err := db.SelectContext(ctx, &rows, db.Rebind(`SELECT id, queue, concurrency, lease_ms, started_at, heartbeat_at
		FROM fleet_workers WHERE heartbeat_at > ? ORDER BY id`), now.Add(-24*time.Hour).UnixNano()); err != nil {
		return nil, fmt.Errorf("fleet: list workers: %w", err)
	}
	leases, err := rt.Reader().Leases(ctx)
	if err != nil {
		return nil, err
	}
	held := map[string][]string{}
	for _, l := range leases {
		if l.ExpiresAt < now.UnixNano() {
			continue
		}
		if r, err := rt.Reader().Run(ctx, l.Run); err == nil && (r.Status == "queued" || r.Status == "running") {
			held[l.Worker] = append(held[l.Worker], l.Run)
		}
	}
	out := []WorkerInfo{}
	for _, r := range rows {
		w := WorkerInfo{ID: r.ID, Queue: r.Queue, Concurrency: r.Concurrency, StartedAt: time.Unix(0, r.StartedAt).UTC(),
			HeartbeatAt: time.Unix(0, r.HeartbeatAt).UTC(), Runs: held[r.ID]}
		w.Live = now.Sub(w.HeartbeatAt) < time.Duration(r.LeaseMS)*time.Millisecond
		if w.Runs == nil {
			w.Runs = []string{}
		}
		if w.Live || all {
			out = append(out, w)
		}
	}
	return out, nil
}

// beat records this worker's heartbeat (the first one registers it).
func (f *Fleet) beat(ctx context.Context, started time.Time) error {
	q := `INSERT INTO fleet_workers (id, queue, concurrency, lease_ms, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`
	if f.rt.Store().Postgres() {
		q = sqlx.Rebind(sqlx.DOLLAR, q)
	}
	_, err := f.db.ExecContext(ctx, q, f.opts.WorkerID, f.opts.Queue, f.opts.Concurrency, f.opts.LeaseTime.Milliseconds(),
		started.UnixNano(), time.Now().UnixNano())
	return err
}

// goodbye removes this worker's row when it stops cleanly.
func (f *Fleet) goodbye(ctx context.Context) error {
	q := `DELETE FROM fleet_workers WHERE id = ?`
	if f.rt.Store().Postgres() {
		q = sqlx.Rebind(sqlx.DOLLAR, q)
	}
	_, err := f.db.ExecContext(ctx, q, f.opts.WorkerID)
	return err
}
