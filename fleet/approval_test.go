package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/replay"
)

// gatedTally is tally whose second call needs a person's approval.
func gatedTally(_ context.Context, _ string, params map[string]string) (flow.Workflow, error) {
	return tallyWith(params["workspace"], tallyModel{}, 0, nil, flow.WithApproval("tally", flow.When("the second tally", func(_ string, args json.RawMessage) bool {
		return string(args) == `{"n":1}`
	})))
}

// runTally opens a fleet on rt with opts, submits one "tally" run on a
// fresh workspace, and runs the fleet until stop, which the caller defers
// (before the runtime closes).
func runTally(t *testing.T, ctx context.Context, rt *rath.Runtime, opts fleet.Options) (id, ws string, stop func()) {
	t.Helper()
	f, err := fleet.Open(ctx, rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	ws = t.TempDir()
	in, _ := rt.NewUserSession(ctx, "tally")
	if id, err = f.Submit(ctx, "tally", in, map[string]string{"workspace": ws}); err != nil {
		f.Close()
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, time.Second) }()
	return id, ws, func() {
		cancel()
		<-done
		f.Close()
	}
}

// A run on a fleet that waits for a person ends its job without
// finishing (status waiting, no run.finished, no failure); once approved,
// a worker takes it up again by itself and finishes it; it replays.
func testFleetApproval(t *testing.T, dir, dsn string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rt, err := openRuntime(ctx, dir, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	id, ws, stopFleet := runTally(t, ctx, rt, fleet.Options{LeaseTime: 1500 * time.Millisecond, Resolve: gatedTally})
	defer stopFleet()
	// A wait that stops at a person returns the run waiting, not failed.
	ended, err := fleet.WaitEndings(ctx, rt, fleet.WaitOptions{StopAtWaiting: true}, id)
	if err != nil || ended[id] != (fleet.Ending{Status: fleet.StatusWaiting}) {
		t.Fatalf("wait until a person: %+v %v", ended, err)
	}
	var pending []string
	for pending == nil {
		rows, err := rt.Reader().PendingApprovals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			pending = append(pending, r.ID)
		}
		if ctx.Err() != nil {
			t.Fatal("no request came")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The job ended without failing or finishing the run, and stays so.
	time.Sleep(2 * time.Second)
	if r, _ := rt.Reader().Run(ctx, id); r.Status != "waiting" || r.FinishedSeq.Valid {
		t.Fatalf("while waiting: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, id+".log")); string(b) != "tally-0\n" {
		t.Fatalf("before the approval the log holds %q", b)
	}
	// Concurrent deciders (the store's optimistic concurrency on the
	// request's stream): exactly one lands, the others are told.
	var wg sync.WaitGroup
	var landed, refused atomic.Int64
	for i := range 6 {
		wg.Go(func() {
			_, err := approval.Decide(ctx, rt.Store(), pending[0], approval.Decision{Decision: events.DecisionApproved, By: fmt.Sprint("person-", i)}, time.Now())
			switch {
			case err == nil:
				landed.Add(1)
			case errors.Is(err, approval.ErrDecided):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if landed.Load() != 1 || refused.Load() != 5 {
		t.Fatalf("%d decisions landed, %d refused", landed.Load(), refused.Load())
	}
	wait, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	status, err := fleet.Wait(wait, rt, id)
	if err != nil || status[id] != rath.RunOK {
		r, _ := rt.Reader().Run(ctx, id)
		ls, _ := rt.Reader().Leases(ctx)
		t.Fatalf("wait: %v %v; run %+v; leases %+v", status, err, r, ls)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, id+".log")); string(b) != "tally-0\ntally-1\ntally-2\n" {
		t.Fatalf("the log holds %q", b)
	}
	wf, _ := gatedTally(ctx, "tally", map[string]string{"workspace": ws})
	rep, err := replay.Run(ctx, rt, id, wf)
	if err != nil || !rep.OK() {
		t.Fatalf("replay: %v %v", rep, err)
	}
	if _, err := approval.Decide(ctx, rt.Store(), pending[0], approval.Decision{Decision: events.DecisionRejected, By: "bob", Note: "late"}, time.Now()); !errors.Is(err, approval.ErrDecided) {
		t.Fatalf("a second decision: %v", err)
	}
}

func TestFleet_ApprovalSQLite(t *testing.T) {
	t.Parallel()
	testFleetApproval(t, t.TempDir(), "-")
}

func TestFleet_ApprovalPostgres(t *testing.T) {
	t.Parallel()
	dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("fleetapproval%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	testFleetApproval(t, t.TempDir(), dsn)
}

// A request nobody decides before its deadline is decided by its default
// (recorded by "deadline") by a worker's reaper, and the run goes on: the
// model reads the rejection and the run finishes.
func TestFleet_ApprovalDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	resolve := func(_ context.Context, _ string, params map[string]string) (flow.Workflow, error) {
		return tallyWith(params["workspace"], tallyModel{}, 0, nil, flow.WithApproval("tally", flow.When("the second tally", func(_ string, args json.RawMessage) bool {
			return string(args) == `{"n":1}`
		}).WithDeadline(time.Second, events.DecisionRejected)))
	}
	f, err := fleet.Open(ctx, rt, fleet.Options{LeaseTime: 1500 * time.Millisecond, Resolve: resolve})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := t.TempDir()
	in, _ := rt.NewUserSession(ctx, "tally")
	id, err := f.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, time.Second) }()
	defer func() { stop(); <-done }()
	status, err := fleet.Wait(ctx, rt, id)
	if err != nil || status[id] != rath.RunOK {
		t.Fatalf("wait: %v %v", status, err)
	}
	rows, err := rt.Reader().RunApprovals(ctx, id)
	if err != nil || len(rows) != 1 || rows[0].Status != events.DecisionRejected || rows[0].DecidedBy != events.DecidedByDeadline {
		t.Fatalf("approvals %+v %v", rows, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, id+".log")); string(b) != "tally-0\ntally-2\n" {
		t.Fatalf("the log holds %q: the rejected call ran, or the run stopped", b)
	}
}

// A run that goes on after a decision is resolved from the parameters
// its run.started recorded (fleet.Resuming says so), not from its
// submission's: what Resolve added before the run started, recorded with
// it, holds for the whole run.
func TestFleet_AResumedRunIsResolvedFromItsRecordedParams(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rt, err := openRuntime(ctx, t.TempDir(), "-")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	type call struct {
		resuming bool
		params   map[string]string
	}
	var mu sync.Mutex
	var calls []call
	resolve := func(ctx context.Context, name string, params map[string]string) (flow.Workflow, error) {
		mu.Lock()
		calls = append(calls, call{fleet.Resuming(ctx), maps.Clone(params)})
		n := len(calls)
		mu.Unlock()
		if !fleet.Resuming(ctx) {
			params["resolved"] = fmt.Sprint("attempt-", n)
		}
		return gatedTally(ctx, name, params)
	}
	id, ws, stopFleet := runTally(t, ctx, rt, fleet.Options{LeaseTime: 1500 * time.Millisecond, Resolve: resolve})
	defer stopFleet()
	var pending []projections.ApprovalRow
	for len(pending) == 0 {
		if pending, err = rt.Reader().PendingApprovals(ctx); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("no request came")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := approval.Decide(ctx, rt.Store(), pending[0].ID, approval.Decision{Decision: events.DecisionApproved, By: "ann"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if status, err := fleet.Wait(ctx, rt, id); err != nil || status[id] != rath.RunOK {
		t.Fatalf("wait: %v %v", status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 2 || calls[0].resuming || len(calls[0].params) != 1 {
		t.Fatalf("resolve calls %+v: want a first one with the submission's params", calls)
	}
	for _, c := range calls[1:] {
		if !c.resuming || c.params["resolved"] != "attempt-1" || c.params["workspace"] != ws {
			t.Fatalf("resolve calls %+v: want the later ones resuming, with the recorded params", calls)
		}
	}
}
