package fleet_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
)

// A run that keeps failing outside its workflow (here: its input session
// is not in the store) is tried MaxAttempts times, then ends failed with
// the reason, visible in the runs projection.
func TestFleet_GivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	elsewhere, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := elsewhere.NewUserSession(ctx, "not in the fleet's store")
	elsewhere.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Open(ctx, rt, fleet.Options{MaxAttempts: 2, LeaseTime: time.Second, Resolve: tally})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := f.Submit(ctx, "tally", foreign, map[string]string{"workspace": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, time.Second) }()
	defer func() { stop(); <-done }()
	status, err := fleet.Wait(ctx, rt, id)
	if !errors.Is(err, fleet.ErrRunFailed) || status[id] != rath.RunError {
		t.Fatalf("wait = %v, %v; want the run failed", status, err)
	}
	r, _ := rt.Reader().Run(ctx, id)
	if !strings.Contains(r.Error, "gave up after 2 attempts") || !strings.Contains(r.Error, "input session") {
		t.Fatalf("the failed run's reason: %q", r.Error)
	}
}

// A worker that dies after River gave it jobs but before it took their
// runs' leases leaves jobs "running" with nobody on them: the other
// workers hand those runs out again about a lease time later, without
// waiting for River's rescue of stuck jobs.
func TestFleet_JobsOfAWorkerThatDiedBeforeLeasing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	rt, err := openRuntime(ctx, dir, "-")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	fl, err := fleet.Open(ctx, rt, fleet.Options{LeaseTime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	ws := t.TempDir()
	var ids []string
	for i := range 4 {
		in, _ := rt.NewUserSession(ctx, fmt.Sprint("tally ", i))
		id, err := fl.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	start := func(mode string) (*exec.Cmd, *bufio.Reader) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s - %s", workerEnv, dir, mode))
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "ready") {
			t.Fatalf("worker did not start: %q", l)
		}
		return cmd, r
	}
	stalled, out := start("stall")
	for range 4 {
		if l, _ := out.ReadString('\n'); !strings.HasPrefix(l, "took a job") {
			t.Fatalf("stalled worker said %q", l)
		}
	}
	stalled.Process.Signal(syscall.SIGKILL)
	stalled.Wait()
	healthy, _ := start("normal")
	defer func() { healthy.Process.Signal(syscall.SIGTERM); healthy.Wait() }()
	t0 := time.Now()
	if status, err := fleet.Wait(ctx, rt, ids...); err != nil {
		t.Fatalf("wait: %v %v", status, err)
	}
	t.Logf("the 4 orphaned runs finished %v after the healthy worker started", time.Since(t0).Round(time.Millisecond))
}

// flakyModel answers like tallyModel, but the first `outage` calls of
// each run's conversation fail with a 503, as a provider in an outage.
type flakyModel struct {
	outage int
	calls  sync.Map // first user message -> *atomic.Int64
}

func (m *flakyModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	n, _ := m.calls.LoadOrStore(req.Messages[1].Content, new(atomic.Int64))
	if n.(*atomic.Int64).Add(1) <= int64(m.outage) {
		return model.Response{}, &model.Error{Kind: model.KindServer, StatusCode: 503, Provider: "flaky", Err: errors.New("503 Service Unavailable")}
	}
	return tallyModel{}.Complete(ctx, req)
}

// A run whose model call fails with a 5xx after the provider's own
// retries is left open and retried as a whole, resumed from its record
// (the tool call before the outage does not run again); a run whose
// provider stays down ends failed after MaxAttempts with the provider's
// error. Both replay from the log.
func TestFleet_RetriesARunAfterAProviderOutage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ws := t.TempDir()
	models := map[string]*flakyModel{"brief": {outage: 2}, "long": {outage: 100}}
	resolve := func(ctx context.Context, name string, params map[string]string) (flow.Workflow, error) {
		return tallyWith(params["workspace"], models[params["outage"]], 1, nil)
	}
	// The default lease: nothing here is taken over, and a short lease
	// would run out on a loaded machine and make extra attempts.
	f, err := fleet.Open(ctx, rt, fleet.Options{MaxAttempts: 3, RetryBackoff: 100 * time.Millisecond, Resolve: resolve})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]string{}
	for _, outage := range []string{"brief", "long"} {
		in, err := rt.NewUserSession(ctx, "tally "+outage)
		if err != nil {
			t.Fatal(err)
		}
		if ids[outage], err = f.Submit(ctx, "tally", in, map[string]string{"workspace": ws, "outage": outage}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, time.Second) }()
	defer func() { stop(); <-done }()
	status, err := fleet.Wait(ctx, rt, ids["brief"], ids["long"])
	if !errors.Is(err, fleet.ErrRunFailed) || status[ids["brief"]] != rath.RunOK || status[ids["long"]] != rath.RunError {
		for _, id := range ids {
			r, _ := rt.Reader().Run(ctx, id)
			t.Logf("run %s: %s %s", id, r.Status, r.Error)
			evs, _ := rt.Store().ReadRun(ctx, id)
			for _, ev := range evs {
				{
					t.Logf("  %d %s v%d %s %.200s", ev.Seq, ev.Stream, ev.Version, ev.Type, ev.Payload)
				}
			}
		}
		t.Fatalf("wait = %v, %v; want the brief outage's run ok, the long one's failed", status, err)
	}
	r, _ := rt.Reader().Run(ctx, ids["long"])
	if !strings.Contains(r.Error, "503") {
		t.Fatalf("the failed run's reason %q does not name the provider's error", r.Error)
	}
	for outage, id := range ids {
		// Three attempts resume twice. An attempt handed back because the
		// store was busy (a loaded machine) is not counted against
		// MaxAttempts but resumes too, so more are not an error.
		resumes, _ := rt.Store().ReadStream(ctx, events.ResumeStream(id), 1)
		if len(resumes) < 2 {
			t.Errorf("%s: %d run.resumed, want at least 2 (3 attempts)", outage, len(resumes))
		}
		b, _ := os.ReadFile(filepath.Join(ws, id+".log"))
		if outage == "brief" && string(b) != "tally-0\ntally-1\ntally-2\n" {
			t.Errorf("%s: effects %q, want each once", outage, b)
		}
		rep, err := replay.Run(ctx, rt, id, mustWorkflow(t)(tallyWith(ws, models[outage], 1, nil)))
		if err != nil || !rep.OK() || rep.Matched != rep.Recorded {
			t.Fatalf("replay %s = %+v, %v", outage, rep, err)
		}
	}
}
