package flow_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// roundChildEnv makes the test binary the crashing child of
// TestResume_RepeatsOnlyTheToolThatWasRunning; its value is "dir mode".
const roundChildEnv = "RATH_TEST_ROUND_CRASH_CHILD"

// twoToolModel calls tools a and b in one round, then answers "done".
// It is stateless, so a resumed run in another process gets the same
// answers.
type twoToolModel struct{}

func (twoToolModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	for _, m := range req.Messages {
		if m.Role == events.RoleToolResult {
			return model.Response{Content: "done"}, nil
		}
	}
	return model.Response{ToolCalls: []events.ToolCall{tc("ca", "a", `{}`), tc("cb", "b", `{}`)}}, nil
}

// effectAgent has tools a and b that each append their name to
// effects.log in dir. With crash set, b kills the process with SIGKILL
// before its effect; in parallel mode (both tools parallel-safe) it first
// waits until a's result is in the log (at most 5 s), so the crash comes
// while b is the only call running.
func effectAgent(tb testing.TB, rt *rath.Runtime, dir string, parallel, crash bool) *flow.Agent {
	tb.Helper()
	effect := func(name string) error {
		f, err := os.OpenFile(filepath.Join(dir, "effects.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, name)
		return err
	}
	var opts []flow.ToolOption
	if parallel {
		opts = append(opts, flow.WithParallelSafe())
	}
	a, err := flow.NewTool("a", "Tool a.", func(context.Context, *session.Session, struct{}) (string, error) {
		return "a ok", effect("a")
	}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := flow.NewTool("b", "Tool b.", func(ctx context.Context, _ *session.Session, _ struct{}) (string, error) {
		if crash {
			for deadline := time.Now().Add(5 * time.Second); parallel && time.Now().Before(deadline); {
				evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeToolReturned}})
				if err == nil && len(evs) > 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return "b ok", effect("b")
	}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: twoToolModel{}, Model: "fake-1"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/nonexistent"})
	if err != nil {
		tb.Fatal(err)
	}
	agent, err := flow.NewAgent("You use tools.", p, flow.WithTools(a, b))
	if err != nil {
		tb.Fatal(err)
	}
	return agent
}

func startRound(ctx context.Context, rt *rath.Runtime, wf flow.Workflow) (*rath.Run, error) {
	in, err := rt.NewUserSession(ctx, "use a and b")
	if err != nil {
		return nil, err
	}
	return rt.Start(ctx, "round", wf, in, rath.WithSeed("seed-round"), rath.WithRunID("run-round"))
}

// TestResume_RepeatsOnlyTheToolThatWasRunning: a round calls a then b and
// the process is killed during b. a's result was recorded when a
// finished, so the resumed run answers a from the record and runs only b
// again: each side effect happens once.
func TestResume_RepeatsOnlyTheToolThatWasRunning(t *testing.T) {
	if v := os.Getenv(roundChildEnv); v != "" {
		dir, mode, _ := strings.Cut(v, " ")
		ctx := context.Background()
		rt, err := rath.Open(ctx, filepath.Join(dir, "store"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = startRound(ctx, rt, effectAgent(t, rt, dir, mode == "parallel", true))
		t.Fatalf("child finished without crashing: %v", err)
	}
	for _, mode := range []string{"sequential", "parallel"} {
		t.Run(mode, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestResume_RepeatsOnlyTheToolThatWasRunning$")
			cmd.Env = append(os.Environ(), roundChildEnv+"="+dir+" "+mode)
			cmd.Stderr = os.Stderr
			err := cmd.Run()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed by SIGKILL: %v", err)
			}
			if got := readEffects(t, dir); got != "[a]" {
				t.Fatalf("side effects before the crash = %s", got)
			}
			rt, err := rath.Open(ctx, filepath.Join(dir, "store"))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			run, err := replay.Resume(ctx, rt, "run-round", effectAgent(t, rt, dir, mode == "parallel", false))
			if err != nil {
				t.Fatal(err)
			}
			if got := readEffects(t, dir); got != "[a b]" {
				t.Fatalf("side effects after resume = %s, want [a b]: a finished before the crash and must not run again", got)
			}
			cs := run.Output.Chunks()
			if n := len(cs); n < 3 || cs[n-3].Content != "a ok" || cs[n-2].Content != "b ok" || cs[n-1].Content != "done" {
				t.Fatalf("resumed transcript = %v", cs)
			}
			// The resumed run replays exactly and the log verifies.
			rep, err := replay.Run(ctx, rt, "run-round", effectAgent(t, rt, t.TempDir(), mode == "parallel", false))
			if err != nil || !rep.OK() {
				t.Fatalf("replay of the resumed run: %v, %v", rep, err)
			}
			if v, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !v.OK() {
				t.Fatalf("verify: %v, %v", v, err)
			}
		})
	}
}

func readEffects(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "effects.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return fmt.Sprint(strings.Fields(string(b)))
}

// TestReplay_ParallelResultsInRecordedOrder: parallel-safe calls are
// recorded in the order they finish (here b before a); a replay, whose
// answers come back at once in call order, must write them in the
// recorded order to reproduce the record. The transcript keeps call order.
func TestReplay_ParallelResultsInRecordedOrder(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	bDone := make(chan struct{})
	agentWith := func(live bool) *flow.Agent {
		a, _ := flow.NewTool("a", "Tool a.", func(ctx context.Context, _ *session.Session, _ struct{}) (string, error) {
			if live {
				select {
				case <-bDone: // let b finish first
				case <-ctx.Done():
					return "", ctx.Err()
				}
				// b's result is written after b returns: wait for it.
				for range 500 {
					evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeToolReturned}})
					if err == nil && len(evs) > 0 {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			return "a ok", nil
		}, flow.WithParallelSafe())
		b, _ := flow.NewTool("b", "Tool b.", func(context.Context, *session.Session, struct{}) (string, error) {
			if live {
				defer close(bDone)
			}
			return "b ok", nil
		}, flow.WithParallelSafe())
		p, err := flow.ResolveProvider(flow.Provider{Client: twoToolModel{}, Model: "fake-1"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/nonexistent"})
		if err != nil {
			t.Fatal(err)
		}
		agent, err := flow.NewAgent("You use tools.", p, flow.WithTools(a, b))
		if err != nil {
			t.Fatal(err)
		}
		return agent
	}
	run, err := startRound(ctx, rt, agentWith(true))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().Read(ctx, eventlog.Query{RunID: run.ID, Types: []string{events.TypeToolReturned}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range evs {
		p, _ := ev.Decode()
		order = append(order, p.(*events.ToolReturned).Tool)
	}
	if fmt.Sprint(order) != "[b a]" {
		t.Fatalf("tool.returned order = %v, want [b a] (the finish order)", order)
	}
	cs := run.Output.Chunks()
	if n := len(cs); cs[n-3].Content != "a ok" || cs[n-2].Content != "b ok" {
		t.Fatalf("transcript not in call order: %v", cs)
	}
	for i := range 5 {
		rep, err := replay.Run(ctx, rt, run.ID, agentWith(false))
		if err != nil || !rep.OK() {
			t.Fatalf("replay %d: %v, %v", i, rep, err)
		}
	}
}

// A tool round is two appends, each one commit: the model's reply, its
// provider.called and the tool.called it asks for, then the tool's
// tool.returned with its result chunk. The appends of an agent that runs
// one round more grow by exactly two, whatever the rest of the agent
// writes.
func TestAgent_AToolRoundIsTwoAppends(t *testing.T) {
	ctx := t.Context()
	appends := func(rounds int) int64 {
		rt := MustOpen(t)
		noop, err := flow.NewTool("noop", "Does nothing.", func(context.Context, *session.Session, struct{}) (string, error) { return "ok", nil })
		if err != nil {
			t.Fatal(err)
		}
		p, err := flow.ResolveProvider(flow.Provider{Client: roundsModel{rounds: rounds}, Model: "fake-1"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/nonexistent"})
		if err != nil {
			t.Fatal(err)
		}
		agent, err := flow.NewAgent("You use tools.", p, flow.WithTools(noop))
		if err != nil {
			t.Fatal(err)
		}
		in, err := rt.NewUserSession(ctx, "use noop")
		if err != nil {
			t.Fatal(err)
		}
		before := rt.Store().Stats()
		out, err := agent.Forward(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		after := rt.Store().Stats()
		if got := len(out.Chunks()); got != 2+2*rounds {
			t.Fatalf("%d rounds: %d chunks, want %d", rounds, got, 2+2*rounds)
		}
		evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeToolReturned}})
		if err != nil || len(evs) != rounds {
			t.Fatalf("%d rounds: %d tool.returned, %v", rounds, len(evs), err)
		}
		if after.Commits-before.Commits != after.Requests-before.Requests {
			t.Fatalf("%d rounds: %d commits for %d appends: appends shared a commit, so the count says nothing", rounds,
				after.Commits-before.Commits, after.Requests-before.Requests)
		}
		return after.Requests - before.Requests
	}
	one, three := appends(1), appends(3)
	if three-one != 4 {
		t.Fatalf("appends: %d with one tool round, %d with three; want two more a round", one, three)
	}
}
