package demo_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/demo"
	"github.com/gorath/rath/replay"
)

func runDemo(t *testing.T, dir, backend string) *demo.Summary {
	t.Helper()
	ctx := context.Background()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sum, err := demo.Run(ctx, rt, demo.Options{Backend: backend})
	if err != nil {
		t.Fatalf("demo: %v (summary %+v)", err, sum)
	}
	return sum
}

func checkDemo(t *testing.T, backend string) {
	dir := t.TempDir()
	first := runDemo(t, dir, backend)
	if first.Forks != 2 || first.Rejected != 1 || first.ToolCalls != 9 || first.Decisions != 5 || first.Committed != 2 {
		t.Fatalf("summary = %+v", first)
	}
	if !first.Verified || first.Replay == nil || !first.Replay.OK() || first.Replay.Matched != first.Events {
		t.Fatalf("verify %v, replay %v", first.Verified, first.Replay)
	}
	if first.Recalled != 0 {
		t.Fatalf("a fresh store recalled %d memories", first.Recalled)
	}
	// The workspace holds the approved patch and the reviewer's test, and
	// the tests pass: the tools were real.
	cmd := exec.Command("python3", "-m", "unittest", "-q")
	cmd.Dir = first.Workspace
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Ran 3 tests") {
		t.Fatalf("tests in the workspace: %v\n%s", err, out)
	}
	if filepath.Base(first.Workspace) != filepath.Base(dir)+"-work" {
		t.Fatalf("workspace = %s", first.Workspace)
	}
	// A second run on the same store recalls the first run's lesson.
	second := runDemo(t, dir, backend)
	if second.Recalled == 0 || !second.Replay.OK() {
		t.Fatalf("second run: recalled %d, replay %v", second.Recalled, second.Replay)
	}
}

func TestDemo_Local(t *testing.T) { checkDemo(t, "local") }

// The demo's tools reproduce when run again: a replay with live tools, in
// a fresh copy of the workspace, matches every recorded event.
func TestDemo_ReplayWithLiveTools(t *testing.T) { checkLiveTools(t, "local") }

func checkLiveTools(t *testing.T, backend string) {
	ctx := t.Context()
	dir := t.TempDir()
	sum := runDemo(t, dir, backend)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i := range 2 {
		wf, err := demo.Build(ctx, rt, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Run(ctx, rt, sum.Run, wf, replay.WithLiveTools())
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Matched != rep.Recorded {
			t.Fatalf("live-tools replay %d: %v", i, rep)
		}
	}
}
