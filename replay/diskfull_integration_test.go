//go:build integration

package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/tmpfs"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// The store's filesystem fills up in the middle of a run (a tool fills
// it, as a neighbour on the same disk would): the run fails with a typed
// error, the store verifies with every acknowledged event, and once space
// returns the run is resumed to the end without repeating the tool calls
// that had finished.
func TestResume_AfterTheDiskFilledUp(t *testing.T) {
	ctx := t.Context()
	disk := tmpfs.Mount(t, "6m")
	effects := t.TempDir() // the tool's side effects live off the full disk
	filler := filepath.Join(disk, "filler")
	agent := diskFillingAgent(t, effects, filler, 2)

	rt, err := rath.Open(ctx, filepath.Join(disk, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, runErr := startCounting(ctx, rt, agent)
	if !errors.Is(runErr, eventlog.ErrFull) {
		t.Fatalf("run on a full disk: %v, want an error matching eventlog.ErrFull", runErr)
	}
	if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify on the full disk: %+v %v", rep, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	run, err := replay.Resume(ctx, rt, "run-count", agent)
	if err != nil {
		t.Fatalf("resume once space returned: %v", err)
	}
	if got := run.Output.Chunks(); !strings.Contains(got[len(got)-1].Content, "counted 5") {
		t.Fatalf("resumed output ends with %q", got[len(got)-1].Content)
	}
	// Calls 0 and 1 finished before the disk filled: once each. Call 2 was
	// the one whose result could not be recorded: at least once.
	b, err := os.ReadFile(filepath.Join(effects, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run failed with %v; effects after resume: %q", runErr, b)
	for n := range 5 {
		c := strings.Count(string(b), fmt.Sprintf("call %d\n", n))
		if c == 0 || (n != 2 && c != 1) {
			t.Fatalf("call %d ran %d times; effects:\n%s", n, c, b)
		}
	}
	if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify after resume: %+v %v", rep, err)
	}
	rep, err := replay.Run(ctx, rt, "run-count", agent)
	if err != nil || !rep.OK() {
		t.Fatalf("replay of the resumed run: %v %v", rep, err)
	}
}

// diskFillingAgent counts like sideEffectAgent, and the call numbered
// fillAt fills the disk holding filler after its side effect.
func diskFillingAgent(tb testing.TB, dir, filler string, fillAt int) *flow.Agent {
	var filled atomic.Bool // the disk fills once; the resumed call finds space
	count, err := flow.NewTool("count", "Count, with a side effect.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) {
		f, err := os.OpenFile(filepath.Join(dir, "effects.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(f, "call %d\n", a.N)
		f.Close()
		if a.N == fillAt {
			if filled.CompareAndSwap(false, true) {
				fill(filler)
			}
		}
		return fmt.Sprint("n=", a.N, " ", strings.Repeat("x", 16<<10)), nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: echoModel{5}}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := flow.NewAgent("You count.", p, flow.WithTools(count))
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// fill writes to path until the filesystem is full.
func fill(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			return
		}
	}
}
