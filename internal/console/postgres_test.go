package console_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/internal/pgtest"
)

// The console's own SQL (the runs page, its summaries, the LIKE search,
// the run graph) and the live tail run on PostgreSQL too.
func TestPostgres_RunsSearchGraphAndLiveTail(t *testing.T) {
	ctx := t.Context()
	rt := pgRuntime(t)
	first := startRun(t, rt, "shouter_100%", "Shout "+hostile)
	startRun(t, rt, "other", "again")
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	f := serveFixture(t, srv, rt, first)

	page := decode[console.RunsPage](t, f.get(t, "/api/runs?limit=1", ""))
	if len(page.Runs) != 1 || page.NextBefore == 0 || page.Runs[0].Workflow != "other" {
		t.Fatalf("page 1: %+v", page)
	}
	page = decode[console.RunsPage](t, f.get(t, "/api/runs?limit=1&before="+itoa(page.NextBefore), ""))
	r := page.Runs[0]
	if len(page.Runs) != 1 || r.ID != first || r.ToolCalls != 1 || r.Usage.TotalTokens != 74 || r.Status != "done" {
		t.Fatalf("page 2: %+v", page)
	}
	if got := decode[console.RunsPage](t, f.get(t, "/api/runs?q=100%25", "")).Runs; len(got) != 1 || got[0].ID != first {
		t.Fatalf("q=100%%: %+v", got)
	}
	if got := decode[console.RunsPage](t, f.get(t, "/api/runs?q=_", "")).Runs; len(got) != 1 {
		t.Fatalf("q=_ (literal): %d runs", len(got))
	}
	if got := decode[console.RunsPage](t, f.get(t, "/api/runs?status=failed", "")).Runs; len(got) != 0 {
		t.Fatalf("status=failed: %+v", got)
	}
	if body := f.get(t, "/api/sessions/"+r.Output, ""); strings.Contains(body, "<script>") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Fatalf("session: %.300s", body)
	}
	if g := decode[console.GraphView](t, f.get(t, "/api/graph?run="+first, "")); len(g.Nodes) != 1 {
		t.Fatalf("graph: %+v", g)
	}

	// The live tail wakes on LISTEN/NOTIFY.
	g := &gate{open: make(chan struct{})}
	in, err := rt.NewUserSession(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rt.Start(context.Background(), "gated", g, in, rath.WithRunID("run-pg-gated"))
		done <- err
	}()
	waitFor(t, func() bool {
		v, err := rt.Store().ReadRun(ctx, "run-pg-gated")
		return err == nil && len(v) > 0 && strings.Contains(string(v[len(v)-1].Payload), "waiting at the gate")
	})
	res, err := http.Get(f.http.URL + "/api/runs/run-pg-gated/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	ch := sse(t, res)
	n := 0
	for {
		m := next(t, ch)
		if strings.Contains(m[1], "waiting at the gate") {
			break
		}
		n++
	}
	close(g.open)
	for {
		m := next(t, ch)
		if m[0] == "end" {
			break
		}
		n++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Fatalf("%d events streamed", n)
	}
}

// pgRuntime opens a runtime on a throwaway PostgreSQL cluster.
func pgRuntime(t *testing.T) *rath.Runtime {
	t.Helper()
	ctx := t.Context()
	pg, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	dsn, err := pg.CreateDatabase(ctx, "rath")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: filepath.Join(t.TempDir(), "local"), DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}
