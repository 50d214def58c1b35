package fleet_test

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/pgtest"
)

// BenchmarkFleet_StatementsPerRun counts, on PostgreSQL, the statements
// the server runs for each run a worker takes and finishes (one model
// call, no tools), from pg_stat_statements: those of rath's store and
// fleet, apart from River's own (on its river_ tables). It reports them
// per run, with the rows they read, and logs the statements that cost
// the most. It starts a server of its own, with pg_stat_statements loaded.
func BenchmarkFleet_StatementsPerRun(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	srv, err := pgtest.Start(ctx, pgtest.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	dsn, err := srv.CreateDatabase(ctx, "statements")
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Exec(ctx, "statements", `CREATE EXTENSION pg_stat_statements`); err != nil {
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
	n := max(b.N, 20)
	ids := submitInstant(ctx, b, rt, f, n)
	db, err := eventlog.OpenPostgresReadPool(dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, 10*time.Second) }()
	// Waits on a statement of its own, left out of the count (fleet.Wait
	// reads each run's row).
	for finished := 0; finished < len(ids); time.Sleep(20 * time.Millisecond) {
		if err := db.QueryRowContext(ctx, `SELECT /* statements-bench */ count(*) FROM runs WHERE finished_seq IS NOT NULL`).Scan(&finished); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop()
	<-done
	calls, rows, top := statementsOf(ctx, b, db)
	b.ReportMetric(float64(calls)/float64(n), "stmts/run")
	b.ReportMetric(float64(rows)/float64(n), "rows/run")
	for _, s := range top {
		b.Logf("%6.2f/run %s", float64(s.calls)/float64(n), s.query)
	}
}

type statement struct {
	query       string
	calls, rows int64
}

// statementsOf sums the calls and rows of the statements rath ran (not
// River's, not this count's own, not transaction control) and returns
// the 30 most called.
func statementsOf(ctx context.Context, b *testing.B, db *sql.DB) (calls, rows int64, top []statement) {
	b.Helper()
	res, err := db.QueryContext(ctx, `SELECT query, calls, rows FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Close()
	for res.Next() {
		var s statement
		if err := res.Scan(&s.query, &s.calls, &s.rows); err != nil {
			b.Fatal(err)
		}
		q := strings.ToLower(s.query)
		if strings.Contains(q, "river") || strings.Contains(q, "pg_stat_statements") || strings.Contains(q, "statements-bench") || strings.Contains(q, "pg_notify") ||
			strings.HasPrefix(q, "begin") || strings.HasPrefix(q, "commit") || strings.HasPrefix(q, "rollback") ||
			strings.HasPrefix(q, "savepoint") || strings.HasPrefix(q, "release") || strings.Contains(q, "fleet_workers") {
			continue
		}
		calls += s.calls
		rows += s.rows
		s.query = strings.Join(strings.Fields(s.query), " ")
		if len(s.query) > 140 {
			s.query = s.query[:140] + "…"
		}
		top = append(top, s)
	}
	if err := res.Err(); err != nil {
		b.Fatal(err)
	}
	sort.Slice(top, func(i, j int) bool { return top[i].calls > top[j].calls })
	return calls, rows, top[:min(len(top), 30)]
}
