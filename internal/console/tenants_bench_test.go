package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/internal/pgtest"
)

// BenchmarkTenants_RunsListRLS measures the runs list's p95 on
// PostgreSQL read by an identity of every tenant (no row-level security)
// and by one tenant's (its transaction under the policies), requests of
// the two interleaved in one run, and reports their ratio (the target:
// at most 1.05).
func BenchmarkTenants_RunsListRLS(b *testing.B) {
	ctx := b.Context()
	pg, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Stop()
	dsn, err := pg.CreateDatabase(ctx, "rath")
	if err != nil {
		b.Fatal(err)
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: filepath.Join(b.TempDir(), "local"), DSN: dsn})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	tenants := []string{"acme", "globex", "initech"}
	var ws []eventlog.Write
	for i := range 600 {
		run := fmt.Sprintf("run-%04d", i)
		ws = append(ws, eventlog.Write{Stream: run, Expected: eventlog.NoStream, Events: []events.Payload{
			events.RunStarted{Run: run, Workflow: "wf", Seed: run, Tenant: tenants[i%3]},
			events.RunFinished{Run: run, Status: rath.RunOK}}})
	}
	if _, err := rt.Store().AppendWrites(ctx, ws...); err != nil {
		b.Fatal(err)
	}
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	get := func(tenant string) time.Duration {
		req := httptest.NewRequest("GET", "http://127.0.0.1/api/runs?limit=50", nil)
		rec := httptest.NewRecorder()
		start := time.Now()
		as(srv, access.Identity{Subject: "bench", Tenant: tenant, Role: access.Viewer}).ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return d
	}
	var plain, rls []time.Duration
	for b.Loop() {
		plain = append(plain, get(""))
		rls = append(rls, get("acme"))
	}
	p95 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)*95/100].Microseconds()) / 1000
	}
	a, r := p95(plain), p95(rls)
	b.ReportMetric(a, "p95_all_ms")
	b.ReportMetric(r, "p95_rls_ms")
	b.ReportMetric(r/a, "rls_ratio")
}
