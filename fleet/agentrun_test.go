package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// lockedBuffer is a log a worker writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A run of the built-in agent submitted as a typed rath.AgentSpec runs on
// a worker that was given no Resolve: the runtime builds it under the
// worker's Policy. It waits for a person; once approved, the worker
// resumes it through fleet.Resume, with the workflow
// rath.Runtime.RecordedWorkflow rebuilds live, and it finishes; the
// record replays.
func testFleetAgentRun(t *testing.T, dsn string) {
	t.Setenv("RATH_HOME", t.TempDir()) // no config file of the machine's
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rt, err := openRuntime(ctx, t.TempDir(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var log lockedBuffer
	f, err := fleet.Open(ctx, rt, fleet.Options{LeaseTime: 1500 * time.Millisecond, Log: &log, Policy: fleet.Policy{Backends: []string{"local"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cassette, err := filepath.Abs("../examples/cassettes/write_and_check.json")
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	spec := rath.AgentSpec{
		System:    "Write and check.",
		Provider:  flow.Provider{Vendor: flow.VendorScripted, Cassette: cassette},
		Tools:     []string{"write_workspace_file", "run_shell_command"},
		Approvals: []flow.ApprovalRule{{Tool: "run_shell_command"}},
		MaxRounds: 8,
		Workspace: ws,
		Backend:   "local",
	}
	in, err := rt.NewUserSession(ctx, "write hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	if in, err = in.To(ctx, "local", ws); err != nil {
		t.Fatal(err)
	}
	id, err := f.Submit(ctx, rath.AgentWorkflow, in, spec.Params())
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, time.Second) }()
	defer func() { stop(); <-done }()

	ended, err := fleet.WaitEndings(ctx, rt, fleet.WaitOptions{StopAtWaiting: true}, id)
	if err != nil || ended[id] != (fleet.Ending{Status: fleet.StatusWaiting}) {
		t.Fatalf("wait until a person: %+v %v\n%s", ended, err, log.String())
	}
	// The request is recorded (and the run reads as waiting) just before
	// the worker looks for a decision: one taken in between lets the
	// first attempt go on. Decide once the worker has handed it back.
	handedBack := fmt.Sprintf("run %s: handed back: waiting for a decision", id)
	for !strings.Contains(log.String(), handedBack) {
		select {
		case <-ctx.Done():
			t.Fatalf("the worker never handed the run back:\n%s", log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	rows, err := rt.Reader().PendingApprovals(ctx)
	if err != nil || len(rows) != 1 {
		t.Fatalf("pending requests %+v %v", rows, err)
	}
	if _, err := approval.Decide(ctx, rt.Store(), rows[0].ID, approval.Decision{Decision: events.DecisionApproved, By: "ann"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	status, err := fleet.Wait(ctx, rt, id)
	if err != nil || status[id] != rath.RunOK {
		t.Fatalf("after the approval: %v %v\n%s", status, err, log.String())
	}
	if want := fmt.Sprintf("run %s: resuming from its record (lease token", id); !strings.Contains(log.String(), want) {
		t.Fatalf("the worker did not resume through fleet.Resume (%q):\n%s", want, log.String())
	}
	started, err := rt.RunStarted(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// What the worker's build resolved is in the record.
	rec, err := rath.ParseAgentSpec(started.Params)
	if err != nil || rec.Resolved == nil || rec.Resolved.Vendor != flow.VendorScripted {
		t.Fatalf("the recorded spec %+v %v", rec, err)
	}
	wf, err := rt.RecordedWorkflow(ctx, id, rath.ReplayMode)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := replay.Run(ctx, rt, id, wf); err != nil || !rep.OK() || !rep.Finished {
		t.Fatalf("replay: %+v %v", rep, err)
	}
}

func TestFleet_AgentRunResumesThroughResume(t *testing.T) {
	testFleetAgentRun(t, "-")
}

func TestFleet_AgentRunResumesThroughResumePostgres(t *testing.T) {
	dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("fleetagent%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	testFleetAgentRun(t, dsn)
}
