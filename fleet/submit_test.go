package fleet_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
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
			if !errors.Is(err, events.ErrConflict) {
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
