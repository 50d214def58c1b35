package fleet_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
)

// Approval deadlines are on the lease clock, like leases: a worker whose
// clock is an hour ahead sets a request's deadline an hour ahead on
// SQLite (its clock is the store's, one machine), and on the database's
// clock on PostgreSQL whatever its own says; either way the reaper judges
// it on the same clock, so the default decision comes a second after the
// request, not an hour early or late.
func TestFleet_ApprovalDeadlineOnTheLeaseClock(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			rt, err := openRuntime(ctx, t.TempDir(), chaosDSN(t, backend))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			resolve := func(_ context.Context, _ string, params map[string]string) (flow.Workflow, error) {
				return tallyWith(params["workspace"], tallyModel{}, 0, nil, flow.WithApproval("tally", flow.When("the second tally", func(_ string, args json.RawMessage) bool {
					return string(args) == `{"n":1}`
				}).WithDeadline(time.Second, events.DecisionRejected)))
			}
			ahead := func() time.Time { return time.Now().Add(time.Hour) }
			id, ws, stopFleet := runTally(t, ctx, rt, fleet.Options{LeaseTime: 1500 * time.Millisecond, Resolve: resolve, Clock: ahead})
			defer stopFleet()
			status, err := fleet.Wait(ctx, rt, id)
			if err != nil || status[id] != rath.RunOK {
				t.Fatalf("wait: %v %v", status, err)
			}
			rows, err := rt.Reader().RunApprovals(ctx, id)
			if err != nil || len(rows) != 1 || rows[0].Status != events.DecisionRejected || rows[0].DecidedBy != events.DecidedByDeadline {
				t.Fatalf("approvals %+v %v", rows, err)
			}
			evs, err := rt.Store().ReadStream(ctx, events.ApprovalStream(rows[0].ID), 1)
			if err != nil || len(evs) == 0 {
				t.Fatalf("approval stream: %v", err)
			}
			p, err := evs[0].Decode()
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Unix(0, p.(*events.ApprovalRequested).Deadline)
			// The lease clock: the worker's (an hour ahead) on SQLite, the
			// database's (this machine's) on PostgreSQL.
			want := time.Now()
			if backend == "sqlite" {
				want = ahead()
			}
			if d := deadline.Sub(want); d < -10*time.Minute || d > 10*time.Minute {
				t.Fatalf("the deadline %v is %v off the lease clock (%v)", deadline, d, want)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, id+".log")); string(b) != "tally-0\ntally-2\n" {
				t.Fatalf("the log holds %q: the rejected call ran, or the run stopped", b)
			}
		})
	}
}
