package replay_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

const crashEnv = "RATH_TEST_RESUME_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		runCrashingChild(dir)
		return
	}
	os.Exit(m.Run())
}

// sideEffectAgent counts with a tool that appends a line per call to
// effects.log in dir; with crashAt >= 0 the process kills itself with
// SIGKILL when that call starts, before its side effect.
func sideEffectAgent(tb testing.TB, dir string, crashAt int) *flow.Agent {
	count, err := flow.NewTool("count", "Count, with a side effect.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) {
		if a.N == crashAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		f, err := os.OpenFile(filepath.Join(dir, "effects.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		fmt.Fprintf(f, "call %d\n", a.N)
		return fmt.Sprint("n=", a.N), nil
	})
	if err != nil {
		panic(err)
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: echoModel{5}}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		panic(err)
	}
	a, err := flow.NewAgent("You count.", p, flow.WithTools(count))
	if err != nil {
		panic(err)
	}
	return a
}

func startCounting(ctx context.Context, rt *rath.Runtime, wf flow.Workflow) (*rath.Run, error) {
	input, err := rt.NewUserSession(ctx, "count to five")
	if err != nil {
		return nil, err
	}
	return rt.Start(ctx, "count", wf, input, rath.WithSeed("seed-1"), rath.WithRunID("run-count"))
}

// openSameSeed opens a store whose sessions made outside a run get the
// same ids as in any other store opened this way: the crashed and the
// clean run then start from one input session id and derive equal ids.
func openSameSeed(ctx context.Context, dir string) (*rath.Runtime, error) {
	return rath.OpenWith(ctx, rath.Options{Dir: dir, Entropy: rand.NewChaCha8([32]byte{})})
}

func runCrashingChild(dir string) {
	ctx := context.Background()
	rt, err := openSameSeed(ctx, filepath.Join(dir, "store"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	_, err = startCounting(ctx, rt, sideEffectAgent(nil, dir, 2))
	fmt.Fprintln(os.Stderr, "child finished without crashing:", err)
	os.Exit(4)
}

func effects(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "call ", "call-"))
}

func TestResume_AfterSIGKILL(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
	if got := effects(t, dir); fmt.Sprint(got) != "[call-0 call-1]" {
		t.Fatalf("side effects before the crash = %v", got)
	}

	rt, err := rath.Open(ctx, filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	run, err := replay.Resume(ctx, rt, "run-count", sideEffectAgent(t, dir, -1))
	if err != nil {
		t.Fatal(err)
	}
	// Each side effect happened exactly once over both processes.
	if got := effects(t, dir); fmt.Sprint(got) != "[call-0 call-1 call-2 call-3 call-4]" {
		t.Fatalf("side effects after resume = %v", got)
	}
	// The final session equals an uninterrupted run's, ids included.
	clean := t.TempDir()
	crt, err := openSameSeed(ctx, filepath.Join(clean, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer crt.Close()
	want, err := startCounting(ctx, crt, sideEffectAgent(t, clean, -1))
	if err != nil {
		t.Fatal(err)
	}
	if run.Output.ID() != want.Output.ID() || fmt.Sprint(run.Output.Chunks()) != fmt.Sprint(want.Output.Chunks()) {
		t.Fatalf("resumed output %s %v\nwant %s %v", run.Output.ID(), run.Output.Chunks(), want.Output.ID(), want.Output.Chunks())
	}
	// The resumed run is complete and replays exactly, and the log verifies.
	rows, _ := rt.Reader().Run(ctx, "run-count")
	if rows.Status != rath.RunOK {
		t.Fatalf("run status = %s", rows.Status)
	}
	rep, err := replay.Run(ctx, rt, "run-count", sideEffectAgent(t, dir, 0))
	if err != nil || !rep.OK() {
		t.Fatalf("replay of the resumed run: %v, %v", rep, err)
	}
	if v, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !v.OK() {
		t.Fatalf("verify: %+v %v", v, err)
	}
	// Resuming a finished run is refused.
	if _, err := replay.Resume(ctx, rt, "run-count", flow.Empty); err == nil {
		t.Fatal("resumed a finished run")
	}
}

func TestForkAt_ContinuesLiveAsANewRun(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	dir := t.TempDir()
	orig, err := startCounting(ctx, rt, sideEffectAgent(t, dir, -1))
	if err != nil {
		t.Fatal(err)
	}
	// Fork after the second tool result: calls up to there come from the
	// record (no side effects), the rest run live.
	evs, _ := rt.Store().Read(ctx, eventlog.Query{RunID: orig.ID, Types: []string{events.TypeToolReturned}})
	at := evs[1].Seq
	os.Remove(filepath.Join(dir, "effects.log"))
	forked, err := replay.ForkAt(ctx, rt, orig.ID, at, sideEffectAgent(t, dir, -1))
	if err != nil {
		t.Fatal(err)
	}
	if got := effects(t, dir); fmt.Sprint(got) != "[call-2 call-3 call-4]" {
		t.Fatalf("live side effects after the fork point = %v", got)
	}
	if forked.ID == orig.ID || forked.Output.ID() == orig.Output.ID() {
		t.Fatal("the fork reused the original run or session")
	}
	row, _ := rt.Reader().Run(ctx, forked.ID)
	if row.ParentRun != orig.ID {
		t.Fatalf("parent run = %q", row.ParentRun)
	}
	if a, b := fmt.Sprint(contents(forked.Output)), fmt.Sprint(contents(orig.Output)); a != b {
		t.Fatalf("fork output %s differs from the original %s", a, b)
	}
}

func contents(s *session.Session) []string {
	var out []string
	for _, c := range s.Chunks() {
		out = append(out, c.Role+":"+c.Content)
	}
	return out
}
