package projections_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorath/rath/projections"
)

// More tenants than the budget of connections, on PostgreSQL: the
// tenants' pools never hold more connections open than the budget; a
// query that finds them all in use waits, bounded by its context, and
// goes on when one is closed; idle connections of some tenants do not
// keep another's query waiting.
func TestScopes_ConnectionBudget(t *testing.T) {
	ctx := t.Context()
	dsn, err := server.CreateDatabase(ctx, fmt.Sprintf("budget%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	rt := store{name: "postgres", dir: t.TempDir(), dsn: dsn}.open(t)
	defer rt.Close()
	const budget = 2
	scopes := projections.NewScopes(rt.Store().DB(), projections.ScopesOptions{Conns: budget})
	defer scopes.Close()
	open := func(t *testing.T) int {
		t.Helper()
		var n int
		if err := rt.Store().DB().GetContext(ctx, &n, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
			projections.TenantPoolApp); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// hold runs a query in tenant's scope and keeps its connection until
	// the rows are closed.
	hold := func(ctx context.Context, tenant string) (*sql.Rows, error) {
		sc, err := scopes.Scope(ctx, tenant)
		if err != nil {
			return nil, err
		}
		return sc.QueryContext(ctx, `SELECT id FROM runs`)
	}
	a, err := hold(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := hold(ctx, "t2")
	if err != nil {
		t.Fatal(err)
	}
	if n := open(t); n != budget {
		t.Fatalf("%d tenant connections open, want %d", n, budget)
	}

	// Full: a third tenant's query waits as long as its context allows.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = hold(short, "t3")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a query over the budget: %v, want it to wait until its deadline", err)
	}

	// It goes on when a connection is closed.
	type got struct {
		rows *sql.Rows
		err  error
	}
	c := make(chan got, 1)
	go func() {
		rows, err := hold(ctx, "t3")
		c <- got{rows, err}
	}()
	waitFor(t, func() bool { return scopes.Waiting() == 1 })
	a.Close()
	r := <-c
	if r.err != nil {
		t.Fatalf("a query waiting for a connection: %v", r.err)
	}
	// A closed connection's backend leaves pg_stat_activity shortly
	// after the client hangs up.
	waitFor(t, func() bool { return open(t) <= budget })
	b.Close()
	r.rows.Close()

	// The closed rows left idle connections behind; eight more tenants'
	// queries, one after another and then together, all get one.
	for i := range 8 {
		rows, err := hold(ctx, fmt.Sprintf("u%d", i))
		if err != nil {
			t.Fatalf("tenant u%d: %v", i, err)
		}
		rows.Close()
	}
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			sc, err := scopes.Scope(ctx, fmt.Sprintf("v%d", i))
			if err == nil {
				var n int
				err = sc.GetContext(ctx, &n, `SELECT COUNT(*) FROM runs`)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return open(t) <= budget })
}

// A tenant's connections are named rath tenant, or what the DSN names
// the application, as the store's own connections are.
func TestScopes_ConnectionsNamed(t *testing.T) {
	for _, tt := range []struct {
		name, query, want string
	}{
		{"rath's name", "", projections.TenantPoolApp},
		{"the DSN's", "&application_name=ops", "ops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			dsn, err := server.CreateDatabase(ctx, fmt.Sprintf("named%d", dbs.Add(1)))
			if err != nil {
				t.Fatal(err)
			}
			rt := store{name: "postgres", dir: t.TempDir(), dsn: dsn + tt.query}.open(t)
			defer rt.Close()
			scopes := projections.NewScopes(rt.Store().DB(), projections.ScopesOptions{})
			defer scopes.Close()
			sc, err := scopes.Scope(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			var app string
			if err := sc.GetContext(ctx, &app, `SELECT current_setting('application_name')`); err != nil {
				t.Fatal(err)
			}
			if app != tt.want {
				t.Fatalf("a tenant's connection is named %q, want %q", app, tt.want)
			}
		})
	}
}

// waitFor polls cond until it holds, failing after 10 s: for what
// another process or goroutine does, never to pace the test.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
