package fleet_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/fleet"
)

// A batch is one transaction: when one of its runs cannot be written
// (here its input session's stream exists already), no run, session or
// job of the batch is.
func TestFleet_SubmitBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			opts := rath.Options{Dir: t.TempDir()}
			if backend == "postgres" {
				dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("fleet%d", dbs.Add(1)))
				if err != nil {
					t.Fatal(err)
				}
				opts.DSN = dsn
			}
			ctx := t.Context()
			rt, err := rath.OpenWith(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			fl, err := fleet.Open(ctx, rt, fleet.Options{SubmitOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer fl.Close()
			prep := func(text string) fleet.Submission {
				in, err := rt.PrepareUserSession(ctx, text, "", "")
				if err != nil {
					t.Fatal(err)
				}
				return fleet.Submission{Workflow: "wf", Input: in}
			}
			first := prep("one")
			if _, err := fl.SubmitBatch(ctx, []fleet.Submission{first}); err != nil {
				t.Fatal(err)
			}
			head, _ := rt.Store().Head(ctx)
			var jobs0 int
			rt.Store().DB().QueryRowContext(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs0)

			_, err = fl.SubmitBatch(ctx, []fleet.Submission{prep("two"), first, prep("three")})
			if !errors.Is(err, eventlog.ErrConflict) {
				t.Fatalf("a batch reusing a written session: %v, want a conflict", err)
			}
			after, _ := rt.Store().Head(ctx)
			var jobs int
			if err := rt.Store().DB().QueryRowContext(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil {
				t.Fatal(err)
			}
			if after != head || jobs != jobs0 || jobs0 != 1 {
				t.Fatalf("after a failed batch: head %+v → %+v, jobs %d → %d", head, after, jobs0, jobs)
			}
			if err := fl.Run(ctx, 0); !errors.Is(err, fleet.ErrSubmitOnly) {
				t.Fatalf("Run on a submit-only fleet: %v", err)
			}
		})
	}
}

// A submit-only fleet on PostgreSQL opens no connection of its own: it
// checks River's schema through the event store's read pool, and closing
// the fleet leaves that pool to the store. A lone "rath submit" so holds
// the store's three connections only (the writer's, the Merkle tree
// builder's and one reader's).
func TestFleet_SubmitOnlySharesTheStoresConnections(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := fmt.Sprintf("fleet%d", dbs.Add(1))
	dsn, err := server.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := rath.Migrate(ctx, dsn); err != nil { // as "rath migrate up" left it
		t.Fatal(err)
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	backends := func() int {
		t.Helper()
		var n int
		// The store's read pool asks: its own connection is one of those counted.
		if err := rt.Store().DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fl, err := fleet.Open(ctx, rt, fleet.Options{SubmitOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.PrepareUserSession(ctx, "one", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fl.SubmitBatch(ctx, []fleet.Submission{{Workflow: "wf", Input: in}}); err != nil {
		t.Fatal(err)
	}
	if n := backends(); n > 3 {
		t.Errorf("a runtime and a submit-only fleet hold %d connections, want the writer's, the tree builder's and one reader's", n)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	var jobs int
	if err := rt.Store().DB().QueryRowContext(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("the store's reads after the fleet closed: %d jobs, %v", jobs, err)
	}
}
