package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

var (
	server *pgtest.Server
	dbs    atomic.Int64
)

// workerEnv makes the test binary a worker process: "DIR DSN [MODE]"
// (DSN may be "-" for the SQLite store in DIR).
const workerEnv = "RATH_FLEET_TEST_WORKER"

// effectEnv names a file outside every workspace to which each execution
// of a tally call appends "RUN tally-N": unlike the workspace's log it is
// not idempotent, so it counts how often each call ran.
const effectEnv = "RATH_FLEET_TEST_EFFECT"

// defaultsEnv makes the worker use the default lease and DeadAfter.
const defaultsEnv = "RATH_FLEET_TEST_DEFAULTS"

// busyEnv is the worker's busy timeout (a duration).
const busyEnv = "RATH_FLEET_TEST_BUSY"

// slowEnv makes each tally call take this long (a duration).
const slowEnv = "RATH_FLEET_TEST_SLOW"

// skewEnv sets the worker's clock this far off the machine's (a
// duration, negative for behind), as a machine whose clock is wrong.
const skewEnv = "RATH_FLEET_TEST_SKEW"

// deadAfterEnv and leaseEnv are the worker's DeadAfter and LeaseTime (durations).
const (
	deadAfterEnv = "RATH_FLEET_TEST_DEAD_AFTER"
	leaseEnv     = "RATH_FLEET_TEST_LEASE"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(workerProcess(spec))
	}
	pgtest.Main(m, func(s *pgtest.Server) { server = s }, rathBin.Remove)
}

// tallyModel answers from the request alone: it calls "tally" until the
// conversation holds three tool results, then answers.
type tallyModel struct{}

func (tallyModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == events.RoleToolResult {
			n++
		}
	}
	if n == 3 {
		return model.Response{Content: "tallied 3", Usage: events.Usage{TotalTokens: 5}}, nil
	}
	return model.Response{ToolCalls: []events.ToolCall{{ID: fmt.Sprint("t", n), Name: "tally", Arguments: fmt.Sprintf(`{"n":%d}`, n)}},
		Usage: events.Usage{TotalTokens: 6}}, nil
}

type tallyArgs struct {
	N int `json:"n"`
}

// tally is the workflow the fleet runs: each tool call appends a line to
// RUN.log in the workspace the run was submitted with. The effect is
// idempotent by its call (a call re-run after a crash does not add a
// second line), which is what makes it exactly once.
func tally(_ context.Context, _ string, params map[string]string) (flow.Workflow, error) {
	return tallyWith(params["workspace"], tallyModel{}, 0, nil)
}

// tallyWith is tally's agent on client; attempts > 0 bounds the
// provider's own retries of a failed call; inTool, if set, runs in each
// tool call after its effect; opts add to the agent.
func tallyWith(dir string, client model.Client, attempts int, inTool func(), opts ...flow.AgentOption) (*flow.Agent, error) {
	if dir == "" {
		return nil, fmt.Errorf("no workspace")
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("the run's workspace is gone: %w", err)
	}
	tool, err := flow.NewTool("tally", "Tally, with a side effect.", func(ctx context.Context, s *session.Session, a tallyArgs) (string, error) {
		r := s.Run()
		if effect := os.Getenv(effectEnv); effect != "" {
			f, err := os.OpenFile(effect, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(f, "%s tally-%d\n", r.ID, a.N)
			f.Close()
		}
		if d, err := time.ParseDuration(os.Getenv(slowEnv)); err == nil {
			time.Sleep(d)
		}
		file := filepath.Join(dir, r.ID+".log")
		line := fmt.Sprintf("tally-%d", a.N)
		b, _ := os.ReadFile(file)
		if !strings.Contains(string(b), line+"\n") {
			f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			fmt.Fprintln(f, line)
			f.Close()
		}
		if inTool != nil {
			inTool()
		}
		time.Sleep(30 * time.Millisecond) // a tool that takes a while
		return "n=" + fmt.Sprint(a.N), nil
	})
	if err != nil {
		return nil, err
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: client, Model: "tally", Retry: flow.RetryPolicy{MaxAttempts: attempts}},
		flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		return nil, err
	}
	return flow.NewAgent("You tally.", p, append([]flow.AgentOption{flow.WithTools(tool)}, opts...)...)
}

func openRuntime(ctx context.Context, dir, dsn string) (*rath.Runtime, error) {
	if dsn == "-" {
		dsn = ""
	}
	return rath.OpenWith(ctx, rath.Options{Dir: dir, DSN: dsn})
}

func workerProcess(spec string) int {
	f := strings.Fields(spec)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	dsn := f[1]
	if dsn == "-" {
		dsn = ""
	}
	busy, _ := time.ParseDuration(os.Getenv(busyEnv))
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: f[0], DSN: dsn, Store: rath.StoreOptions{BusyTimeout: busy}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	defer rt.Close()
	// Leases generous for a loaded machine: a takeover after a crash
	// comes from the heartbeat (DeadAfter), not from the lease running out.
	opts := fleet.Options{Concurrency: 4, LeaseTime: 10 * time.Second, DeadAfter: 3 * time.Second, Resolve: tally,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Log: os.Stderr}
	if os.Getenv(defaultsEnv) != "" {
		opts.LeaseTime, opts.DeadAfter = 0, 0
	}
	if skew, err := time.ParseDuration(os.Getenv(skewEnv)); err == nil {
		opts.Clock = func() time.Time { return time.Now().Add(skew) }
	}
	if d, err := time.ParseDuration(os.Getenv(deadAfterEnv)); err == nil {
		opts.DeadAfter = d
	}
	if d, err := time.ParseDuration(os.Getenv(leaseEnv)); err == nil {
		opts.LeaseTime = d
	}
	if len(f) > 2 && f[2] == "hold" {
		// Take runs and hang in their first tool call, until killed.
		opts.Resolve = func(_ context.Context, _ string, params map[string]string) (flow.Workflow, error) {
			return tallyWith(params["workspace"], tallyModel{}, 0, func() { fmt.Println("holding"); select {} })
		}
	}
	if len(f) > 2 && f[2] == "stall" {
		// Take jobs, then hang before taking their runs' leases.
		opts = fleet.WithBeforeTake(opts, func() { fmt.Println("took a job"); select {} })
	}
	fl, err := fleet.Open(ctx, rt, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 3
	}
	defer fl.Close()
	fmt.Println("ready", fl.WorkerID())
	if err := fl.Run(ctx, 10*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		return 3
	}
	return 0
}

// testFleet submits runs, works them on three worker processes, SIGKILLs
// one of them mid-way, and checks that every run finished, every effect
// happened once, every run replays and the log verifies.
func testFleet(t *testing.T, dir, dsn string) {
	// 30 runs (50 before the suite neared its 20 minutes): the kill still
	// lands with a quarter done and more in flight; make soak runs longer.
	const runs, workers = 30, 3
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // generous: a loaded machine
	defer cancel()
	local := dir
	if dsn != "-" {
		local = t.TempDir()
	}
	rt, err := openRuntime(ctx, local, dsn)
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
	for i := range runs {
		in, err := rt.NewUserSession(ctx, fmt.Sprintf("tally %d", i))
		if err != nil {
			t.Fatal(err)
		}
		id, err := fl.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var procs []*exec.Cmd
	var names []string
	for w := range workers {
		wdir := dir
		if dsn != "-" {
			wdir = t.TempDir()
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s", workerEnv, wdir, dsn))
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		l, _ := bufio.NewReader(out).ReadString('\n')
		if !strings.HasPrefix(l, "ready ") {
			t.Fatalf("worker %d did not start: %q", w, l)
		}
		procs = append(procs, cmd)
		names = append(names, strings.TrimSpace(strings.TrimPrefix(l, "ready ")))
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}()
	}
	// Kill a worker once some runs are done and others are in flight.
	for {
		rs, err := rt.Reader().Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range rs {
			if r.Status == rath.RunOK {
				done++
			}
		}
		if done >= runs/4 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("runs did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	procs[0].Process.Signal(syscall.SIGKILL)
	start := time.Now()
	status, err := fleet.Wait(ctx, rt, ids...)
	if err != nil {
		for _, id := range ids {
			if _, ok := status[id]; ok {
				continue
			}
			r, _ := rt.Reader().Run(context.Background(), id)
			t.Logf("stuck run %s: status %q", id, r.Status)
			for _, st := range []string{events.SubmitStream(id), events.LeaseStream(id), id} {
				evs, _ := rt.Store().ReadStream(context.Background(), st, 1)
				for _, ev := range evs {
					t.Logf("  %s v%d %s %s", st, ev.Version, ev.Type, ev.Payload)
				}
			}
			var jobs []string
			rt.Store().DB().Select(&jobs, rt.Store().DB().Rebind(`SELECT state || ' attempt ' || attempt || ' ' || COALESCE(attempted_by, '') FROM river_job WHERE args LIKE ?`), "%"+id+"%")
			t.Logf("  jobs: %v", jobs)
		}
		t.Fatalf("wait: %v", err)
	}
	t.Logf("all %d runs done %v after a worker was killed", runs, time.Since(start).Round(time.Millisecond))
	// The killed worker shows as dead (once its DeadAfter passed without
	// its heartbeat), the two others as live and idle.
	var listed []fleet.WorkerInfo
	for deadline := time.Now().Add(10 * time.Second); ; {
		if listed, err = fleet.Workers(ctx, rt, true); err != nil {
			t.Fatal(err)
		}
		state := map[string]bool{}
		held := 0
		for _, w := range listed {
			state[w.ID] = w.Live
			held += len(w.Runs)
		}
		if len(listed) == workers && !state[names[0]] && state[names[1]] && state[names[2]] && held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers after the kill = %+v; want %s dead, the others live and idle", listed, names[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	taken := 0
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(ws, id+".log"))
		if err != nil || string(b) != "tally-0\ntally-1\ntally-2\n" {
			t.Fatalf("run %s effects = %q, %v; want each once", id, b, err)
		}
		leases, _ := rt.Store().ReadStream(ctx, events.LeaseStream(id), 1)
		resumed, _ := rt.Store().ReadStream(ctx, events.ResumeStream(id), 1)
		started, _ := rt.Store().ReadStream(ctx, id, 1)
		// A lease taken after the run finished (its job came back before
		// the finishing worker's lease ran out) resumes nothing.
		finished := started[len(started)-1].Seq
		if started[len(started)-1].Type != events.TypeRunFinished {
			t.Fatalf("run %s: last event %s, want %s", id, started[len(started)-1].Type, events.TypeRunFinished)
		}
		for _, ev := range leases {
			// A lease taken, not renewed: a worker that took the run
			// before it started renews its lease while running it.
			if p, _ := ev.Decode(); p.(*events.RunLeased).Token > 1 && !p.(*events.RunLeased).Renewal && ev.Seq > started[0].Seq && ev.Seq < finished {
				// Taken over after it started: continued by resume, and
				// the log says so.
				taken++
				if len(resumed) == 0 {
					t.Fatalf("run %s was taken over after it started, but no run.resumed was recorded", id)
				}
				break
			}
		}
		rep, err := replay.Run(ctx, rt, id, mustTally(t, ws))
		if err != nil || !rep.OK() || rep.Matched != rep.Recorded {
			t.Fatalf("replay %s = %+v, %v", id, rep, err)
		}
	}
	t.Logf("%d runs were taken over by another worker", taken)
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

func mustWorkflow(t *testing.T) func(flow.Workflow, error) flow.Workflow {
	return func(wf flow.Workflow, err error) flow.Workflow {
		if err != nil {
			t.Fatal(err)
		}
		return wf
	}
}

func mustTally(t *testing.T, ws string) flow.Workflow {
	wf, err := tally(context.Background(), "tally", map[string]string{"workspace": ws})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func TestFleet_SQLite(t *testing.T) {
	t.Parallel()
	testFleet(t, t.TempDir(), "-")
}

func TestFleet_Postgres(t *testing.T) {
	t.Parallel()
	dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("fleet%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	testFleet(t, "", dsn)
}
