package projections_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/queryplan"
	"github.com/gorath/rath/projections"
)

// The reaper's reads of leases answer from the runs not finished: a run
// that finished keeps its lease row (its last token fences a stale
// holder) but is in none of them, a run waiting for a person has a live
// lease but none to take over, and LeasesOf reads the runs it is given,
// more than a page of them too.
func TestReader_LeaseReadsFollowTheRunsNotFinished(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			rt := st.open(t)
			defer rt.Close()
			now := time.Now().UnixNano()
			far := time.Now().Add(time.Hour).UnixNano()
			appendAll(t, rt,
				events.RunSubmitted{Run: "queued-lapsed", Workflow: "wf", InputSession: "in-1", Queue: "default"},
				events.RunLeased{Run: "queued-lapsed", Worker: "w1", Token: 1, ExpiresAt: 10},
				events.RunStarted{Run: "running-live", Workflow: "wf", InputSession: "in-2", Seed: "s"},
				events.RunLeased{Run: "running-live", Worker: "w1", Token: 1, ExpiresAt: far},
				events.RunStarted{Run: "running-lapsed", Workflow: "wf", InputSession: "in-3", Seed: "s"},
				events.RunLeased{Run: "running-lapsed", Worker: "w2", Token: 3, ExpiresAt: 20},
				events.RunStarted{Run: "waiting", Workflow: "wf", InputSession: "in-4", Seed: "s"},
				events.RunLeased{Run: "waiting", Worker: "w2", Token: 1, ExpiresAt: far},
				events.ApprovalRequested{ID: "ap-1", Run: "waiting", Session: "in-4", Kind: "question", Question: "go on?"},
				events.RunStarted{Run: "finished-live", Workflow: "wf", InputSession: "in-5", Seed: "s"},
				events.RunLeased{Run: "finished-live", Worker: "w1", Token: 1, ExpiresAt: far},
				events.RunFinished{Run: "finished-live", Status: "ok"},
				events.RunStarted{Run: "finished-lapsed", Workflow: "wf", InputSession: "in-6", Seed: "s"},
				events.RunLeased{Run: "finished-lapsed", Worker: "w1", Token: 1, ExpiresAt: 30},
				events.RunFinished{Run: "finished-lapsed", Status: "error", Error: "no"},
			)
			expired, err := rt.Reader().ExpiredLeases(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"queued-lapsed", "running-lapsed"}, expired); diff != "" {
				t.Errorf("expired leases (-want +got):\n%s", diff)
			}
			live, err := rt.Reader().LiveLeases(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			var rows []projections.LeaseRow
			for _, l := range live {
				rows = append(rows, l.LeaseRow)
			}
			if got := leaseRuns(rows); got != "running-live:w1 waiting:w2" || live[0].Status != projections.RunRunning || live[1].Status != projections.RunWaiting {
				t.Errorf("live leases: %s %+v, want running-live:w1 (running) waiting:w2 (waiting)", got, live)
			}
			of, err := rt.Reader().LeasesOf(ctx, []string{"running-lapsed", "finished-lapsed", "nolease"})
			if err != nil {
				t.Fatal(err)
			}
			if got := leaseRuns(of); got != "finished-lapsed:w1 running-lapsed:w2" || of[1].Token != 3 || of[1].ExpiresAt != 20 {
				t.Errorf("leases of three runs: %s %+v", got, of)
			}
			// More runs than a query's page.
			many := make([]string, 1200)
			for i := range many {
				many[i] = fmt.Sprintf("absent-%04d", i)
			}
			many[1100] = "waiting"
			if of, err := rt.Reader().LeasesOf(ctx, many); err != nil || leaseRuns(of) != "waiting:w2" {
				t.Errorf("leases of 1200 runs: %s, %v", leaseRuns(of), err)
			}
		})
	}
}

// openWritable opens st's database on a connection of the test's, which
// may write.
func openWritable(t *testing.T, st store) *sqlx.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if st.dsn == "" {
		db, err = sql.Open("sqlite", eventlog.DSN(filepath.Join(st.dir, rath.DBFile), false, "busy_timeout(10000)"))
	} else {
		db, err = eventlog.OpenPostgresReadPool(st.dsn)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	driver := "sqlite"
	if st.dsn != "" {
		driver = "pgx"
	}
	return sqlx.NewDb(db, driver)
}

func leaseRuns(ls []projections.LeaseRow) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Run+":"+l.Worker)
	}
	return strings.Join(out, " ")
}

// With a history of finished runs, the reaper's queries start from the
// index of the runs not finished on both stores, and read neither table
// whole.
func TestReader_LeaseQueriesUseTheUnfinishedRunsIndex(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			rt := st.open(t)
			rt.Close()
			db := openWritable(t, st)
			for _, q := range []string{
				`INSERT INTO runs (id, status, started_seq, started_at) VALUES (?, 'ok', ?, 0)`,
				`INSERT INTO run_leases (run, worker, token, expires_at, seq) VALUES (?, 'w', 1, 0, ?)`,
			} {
				for i := range 2000 {
					if _, err := db.ExecContext(ctx, db.Rebind(q), fmt.Sprintf("done-%05d", i), i+1); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
			for _, q := range projections.LeaseQueries {
				explain := queryplan.SQLite
				if st.dsn != "" {
					explain, q = queryplan.Postgres, db.Rebind(q)
				}
				plan, err := explain(ctx, db, q, 0)
				if err != nil {
					t.Fatal(err)
				}
				joined := strings.Join(plan, "\n")
				whole := strings.Contains(joined, "Seq Scan")
				for _, line := range plan {
					// SQLite's scan of the partial index reads the
					// unfinished runs only.
					whole = whole || strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, "runs_unfinished")
				}
				if !strings.Contains(joined, "runs_unfinished") || whole {
					t.Errorf("%s\ndoes not start from runs_unfinished:\n%s", q, joined)
				}
			}
		})
	}
}
