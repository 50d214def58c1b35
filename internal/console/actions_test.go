package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
)

// rebuild is the console's workflow resolver in these tests: a fresh
// scripted agent per run (a gated one for gated runs), as `rath serve`
// rebuilds a run's workflow from its record.
// rebuildable registers builders of the test workflows the console
// resumes, forks and replays (rath.Runtime.RegisterBuilder), so that
// Runtime.RecordedWorkflow rebuilds their runs with a fresh agent, as it
// rebuilds any run. Call it before their runs start: Start registers no
// workflow under a name a builder builds.
func rebuildable(t *testing.T, rt *rath.Runtime) {
	t.Helper()
	for _, name := range []string{"shouter", "gated-shouter", "retrier"} {
		rt.RegisterBuilder(name, func(context.Context, *rath.Runtime, map[string]string, rath.Mode) (flow.Workflow, error) {
			if strings.HasPrefix(name, "gated") {
				return newAgent(t, flow.WithApproval("shout", flow.Always())), nil
			}
			return newAgent(t), nil
		})
	}
}

func rebuildFixture(t *testing.T) *fixture {
	t.Helper()
	rt := newRuntime(t)
	rebuildable(t, rt)
	run := startRun(t, rt, "shouter", "Shout "+hostile)
	srv, err := console.New(console.Options{Runtime: rt, AllowLive: true})
	if err != nil {
		t.Fatal(err)
	}
	return serveFixture(t, srv, rt, run)
}

// seqOf is the seq of the run's first event of type typ.
func seqOf(t *testing.T, f *fixture, run, typ string) int64 {
	t.Helper()
	evs, err := f.rt.Store().ReadRun(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == typ {
			return ev.Seq
		}
	}
	t.Fatalf("run %s has no %s", run, typ)
	return 0
}

// waitDone polls until the run finished and returns its status.
func waitDone(t *testing.T, f *fixture, run string) console.RunView {
	t.Helper()
	var v console.RunView
	waitFor(t, func() bool {
		res, body := f.do(t, "GET", "/api/runs/"+run, nil)
		if res.StatusCode != http.StatusOK {
			return false
		}
		v = decode[console.RunView](t, body)
		return v.Status != "running" && v.Status != "queued"
	})
	return v
}

// A fork at an event starts a new run at once, linked to its parent, that
// goes on live from there; a seq outside the run is refused.
func TestFork_AtAnEventGoesOnLive(t *testing.T) {
	f := rebuildFixture(t)
	seq := seqOf(t, f, f.run, events.TypeProviderCalled)
	res, body := f.postJSON(t, "/api/runs/"+f.run+"/fork", `{"seq":`+itoa(seq)+`}`, true)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("fork: %s %s", res.Status, body)
	}
	child := decode[console.StartedView](t, body).Run
	v := waitDone(t, f, child)
	if v.Status != "done" || v.Parent != f.run || v.Usage.Calls == 0 {
		t.Fatalf("fork %s: %+v", child, v)
	}
	other := startRun(t, f.rt, "shouter", "another")
	for _, bad := range []string{`{"seq":0}`, `{"seq":` + itoa(seqOf(t, f, other, events.TypeProviderCalled)) + `}`, `{"seq":"x"}`, `{"at":1}`} {
		if res, body := f.postJSON(t, "/api/runs/"+f.run+"/fork", bad, true); res.StatusCode != http.StatusBadRequest {
			t.Errorf("fork %s: %s %s", bad, res.Status, body)
		}
	}
	if res, _ := f.postJSON(t, "/api/runs/"+f.run+"/fork", `{"seq":`+itoa(seq)+`}`, false); res.StatusCode != http.StatusForbidden {
		t.Errorf("fork without the CSRF header: %s", res.Status)
	}
	if res, _ := f.postJSON(t, "/api/runs/run-nosuch/fork", `{"seq":1}`, true); res.StatusCode != http.StatusNotFound {
		t.Errorf("fork of an unknown run: %s", res.Status)
	}
}

// A waiting run approved with edited arguments and resumed from the
// console runs the edited call; a finished run, or one the fleet owns,
// is not resumed or canceled here.
func TestResumeAndCancel(t *testing.T) {
	f := rebuildFixture(t)
	run := waitingRun(t, f)
	pend := decode[[]approval.View](t, f.get(t, "/api/approvals?run="+run, ""))
	if len(pend) != 1 {
		t.Fatalf("pending = %+v", pend)
	}
	if res, body := f.postJSON(t, "/api/approvals/"+pend[0].ID, `{"decision":"approve","by":"ann","arguments":{"text":"edited"}}`, true); res.StatusCode != http.StatusOK {
		t.Fatalf("approve: %s %s", res.Status, body)
	}
	if res, body := f.postJSON(t, "/api/runs/"+run+"/resume", ``, true); res.StatusCode != http.StatusAccepted {
		t.Fatalf("resume: %s %s", res.Status, body)
	}
	if v := waitDone(t, f, run); v.Status != "done" {
		t.Fatalf("resumed run: %+v", v)
	}
	tools := decode[console.ToolsView](t, f.get(t, "/api/runs/"+run+"/tools", ""))
	if len(tools.Tools) == 0 || tools.Tools[len(tools.Tools)-1].State != console.ToolOK {
		t.Fatalf("tools after the resume: %+v", tools.Tools)
	}
	for _, path := range []string{"/api/runs/" + run + "/resume", "/api/runs/" + f.run + "/cancel"} {
		if res, body := f.postJSON(t, path, ``, true); res.StatusCode != http.StatusConflict {
			t.Errorf("%s: %s %s", path, res.Status, body)
		}
	}
}

// The console's resume is guarded as `rath resume` is: while another
// holder (a worker, a resume in another process) holds the run's lease,
// it is refused before anything runs and the run is left as it was;
// once the lease is released, it takes the lease and the run finishes.
func TestResume_RefusedWhileAnotherHolderHoldsTheLease(t *testing.T) {
	f := rebuildFixture(t)
	ctx := t.Context()
	run := waitingRun(t, f)
	pend := decode[[]approval.View](t, f.get(t, "/api/approvals?run="+run, ""))
	if res, body := f.postJSON(t, "/api/approvals/"+pend[0].ID, `{"decision":"approve","by":"ann"}`, true); res.StatusCode != http.StatusOK {
		t.Fatalf("approve: %s %s", res.Status, body)
	}
	_, _, release, err := fleet.Hold(ctx, f.rt, run, "worker-elsewhere", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before, err := f.rt.Store().ReadRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	res, body := f.postJSON(t, "/api/runs/"+run+"/resume", ``, true)
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "worker-elsewhere") {
		t.Fatalf("resume while held: %s %s", res.Status, body)
	}
	after, err := f.rt.Store().ReadRun(ctx, run)
	if err != nil || len(after) != len(before) {
		t.Fatalf("the refused resume wrote to the run: %d events, then %d (%v)", len(before), len(after), err)
	}
	release()
	if res, body := f.postJSON(t, "/api/runs/"+run+"/resume", ``, true); res.StatusCode != http.StatusAccepted {
		t.Fatalf("resume once released: %s %s", res.Status, body)
	}
	if v := waitDone(t, f, run); v.Status != "done" {
		t.Fatalf("resumed run: %+v", v)
	}
	// The resume held the run's lease: the lease stream names a resume.
	leases, err := f.rt.Store().ReadStream(ctx, events.LeaseStream(run), 1)
	if err != nil || len(leases) < 3 {
		t.Fatalf("lease events %d (%v), want the worker's take and release and the resume's take", len(leases), err)
	}
	p, err := leases[2].Decode()
	if l, ok := p.(*events.RunLeased); err != nil || !ok || !strings.HasPrefix(l.Worker, "resume:") {
		t.Fatalf("third lease event %+v %v, want the console's resume", p, err)
	}
}

// ?view=1 shows the dossier as a page (inline), with the same policy.
func TestDossier_View(t *testing.T) {
	f := newFixture(t, "")
	res, body := f.do(t, "GET", "/api/runs/"+f.run+"/dossier?view=1&verify=0", nil)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "inline;") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") || !strings.Contains(body, "</html>") {
		t.Fatalf("dossier view: %s %v", res.Status, res.Header)
	}
}

// A resume goes on live where the record ends, so the console offers
// and runs it only with AllowLive, as it does a fork: without, it is
// refused (403) and the run left as it was. With it, the default
// resolver (rath.Runtime.RecordedWorkflow, live) cannot go on with a
// library program's run this process never registered: its record
// describes the workflow but its tools are the program's own code. The
// answer is a clear 422 naming that, and the run is left as it was.
func TestResume_LiveOnlyAndProgramRunsRefusedClearly(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	f := serveFixture(t, mustConsole(t, console.Options{Runtime: rt}), rt, "")
	run := waitingRun(t, f)
	pend := decode[[]approval.View](t, f.get(t, "/api/approvals?run="+run, ""))
	if res, body := f.postJSON(t, "/api/approvals/"+pend[0].ID, `{"decision":"approve","by":"ann"}`, true); res.StatusCode != http.StatusOK {
		t.Fatalf("approve: %s %s", res.Status, body)
	}
	f.srv.Close()
	rt.Close()

	// A process that never registered the program's workflow: the stock
	// binary's console.
	fresh, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	before, err := fresh.Store().ReadRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		after, err := fresh.Store().ReadRun(ctx, run)
		if err != nil || len(after) != len(before) {
			t.Fatalf("%s: the run has %d events, then %d (%v)", when, len(before), len(after), err)
		}
	}
	f = serveFixture(t, mustConsole(t, console.Options{Runtime: fresh}), fresh, run)
	if v := decode[console.RunView](t, f.get(t, "/api/runs/"+run, "")); v.Actions == nil || v.Actions.Resume {
		t.Errorf("a console without AllowLive offers the resume: %+v", v.Actions)
	}
	if res, body := f.postJSON(t, "/api/runs/"+run+"/resume", ``, true); res.StatusCode != http.StatusForbidden || !strings.Contains(body, "--allow-live") {
		t.Fatalf("resume without AllowLive: %s %s", res.Status, body)
	}
	unchanged("refused without AllowLive")

	f = serveFixture(t, mustConsole(t, console.Options{Runtime: fresh, AllowLive: true}), fresh, run)
	if v := decode[console.RunView](t, f.get(t, "/api/runs/"+run, "")); v.Actions == nil || !v.Actions.Resume {
		t.Errorf("a console with AllowLive does not offer the resume: %+v", v.Actions)
	}
	res, body := f.postJSON(t, "/api/runs/"+run+"/resume", ``, true)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "cannot be rebuilt") || !strings.Contains(body, "program") {
		t.Fatalf("resume of a program's run: %s %s", res.Status, body)
	}
	unchanged("refused as a program's run")
	// A replay of it still works: the record describes the workflow.
	if res, body := f.postJSON(t, "/api/runs/"+run+"/replay", ``, true); res.StatusCode != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("replay of a program's run: %s %s", res.Status, body)
	}
}

func mustConsole(t *testing.T, opts console.Options) *console.Server {
	t.Helper()
	srv, err := console.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
