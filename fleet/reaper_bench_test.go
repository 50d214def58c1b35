package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/projections"
)

// BenchmarkFleet_ReaperLook times one look of a worker's reaper (it looks
// every half second by default) on PostgreSQL, with 16 runs in flight and
// a history of finished runs (0 and 20,000), each with the lease row the
// store keeps for it. Beside it, the same store answers the two reads the
// reaper made when its queries started from the leases (every lease row,
// and the expired leases joined to their runs): the raw baseline of what
// a look would cost if it still read the history.
func BenchmarkFleet_ReaperLook(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	srv, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	for _, history := range []int{0, 20000} {
		b.Run(fmt.Sprintf("finished=%d", history), func(b *testing.B) {
			dsn, err := srv.CreateDatabase(ctx, fmt.Sprintf("reaper%d_%d", history, dbs.Add(1)))
			if err != nil {
				b.Fatal(err)
			}
			rt, err := openRuntime(ctx, b.TempDir(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			f, err := fleet.Open(ctx, rt, fleet.Options{Concurrency: 1, Resolve: instantWorkflow})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			far := time.Now().Add(time.Hour).UnixNano()
			var writes []eventlog.Write
			flush := func() {
				if _, err := rt.Store().AppendWrites(ctx, writes...); err != nil {
					b.Fatal(err)
				}
				writes = writes[:0]
			}
			run := func(id string, finished bool) {
				evs := []events.Payload{events.RunStarted{Run: id, Workflow: "instant", InputSession: "in-" + id, Seed: id}}
				if finished {
					evs = append(evs, events.RunFinished{Run: id, Status: "ok"})
				}
				writes = append(writes,
					eventlog.Write{Stream: events.LeaseStream(id), Expected: eventlog.NoStream,
						Events: []events.Payload{events.RunLeased{Run: id, Worker: "gone", Token: 1, ExpiresAt: far}}},
					eventlog.Write{Stream: id, Expected: eventlog.NoStream, Events: evs})
				if len(writes) >= 400 {
					flush()
				}
			}
			for i := range history {
				run(fmt.Sprintf("done-%06d", i), true)
			}
			for i := range 16 {
				run(fmt.Sprintf("live-%02d", i), false)
			}
			flush()
			db := rt.Store().DB()
			// As autovacuum leaves a store: the index of runs not
			// finished without the entries of the runs that finished.
			if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
				b.Fatal(err)
			}
			f.ReapOnce(ctx) // the first look prepares its statements
			b.ResetTimer()
			looks := 0
			for b.Loop() {
				f.ReapOnce(ctx)
				looks++
			}
			b.StopTimer()
			// The baseline, after the looks (its rows' garbage would
			// otherwise fall on the looks timed), at most 50 times.
			reads := min(looks, 50)
			t0 := time.Now()
			for range reads {
				var leases []projections.LeaseRow
				if err := db.SelectContext(ctx, &leases, `SELECT run, worker, token, expires_at, seq, version, taken_at FROM run_leases ORDER BY run`); err != nil {
					b.Fatal(err)
				}
				var expired []string
				if err := db.SelectContext(ctx, &expired, `SELECT l.run FROM run_leases l JOIN runs r ON r.id = l.run
					WHERE l.expires_at < $1 AND r.status IN ('queued', 'running') ORDER BY l.run`, time.Now().UnixNano()); err != nil {
					b.Fatal(err)
				}
			}
			raw := time.Since(t0)
			b.ReportMetric(float64(raw.Microseconds())/float64(reads), "history-reads-µs/look")
		})
	}
}
