package replay_test

import (
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	pinned "github.com/gorath/rath/replay/internal/renametest/pinned"
	recorded "github.com/gorath/rath/replay/internal/renametest/recorded"
	renamed "github.com/gorath/rath/replay/internal/renametest/renamed"
)

// Renaming the field that holds an agent changes its recorded module path:
// the replay diverges and says a rename is the likely cause; pinning the
// old name with the struct tag replays the old run again.
func TestReplay_RenameIsNamedAndPinningFixesIt(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent := func() flow.Workflow {
		a, err := flow.NewAgent("Plan.", flow.Scripted(scripted.Entry{Content: "a plan"}))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	in, _ := rt.NewUserSession(ctx, "plan it")
	run, err := rt.Start(ctx, "plan", &recorded.Pipeline{Planner: agent()}, in)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(ctx, rt, run.ID, &renamed.Pipeline{Writer: agent()})
	if err == nil && rep.OK() {
		t.Fatal("the renamed workflow replayed as if nothing changed")
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		msg = rep.Divergence.Error()
	}
	if !strings.Contains(msg, "root.planner") || !strings.Contains(msg, `rath:"planner"`) {
		t.Fatalf("the divergence does not point at the rename: %s", msg)
	}
	rep, err = replay.Run(ctx, rt, run.ID, &pinned.Pipeline{Writer: agent()})
	if err != nil || !rep.OK() {
		t.Fatalf("the pinned workflow: %+v, %v", rep, err)
	}
}

// WithProgress reports the events produced so far against the record's.
func TestReplay_Progress(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent := func() flow.Workflow {
		a, err := flow.NewAgent("Answer.", flow.Scripted(scripted.Entry{Content: "yes"}))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	in, _ := rt.NewUserSession(ctx, "ok?")
	run, err := rt.Start(ctx, "ask", agent(), in)
	if err != nil {
		t.Fatal(err)
	}
	var calls, lastDone, lastTotal int64
	rep, err := replay.Run(ctx, rt, run.ID, agent(), replay.WithProgress(func(done, total int64) {
		calls++
		if done < lastDone {
			t.Errorf("progress went back: %d after %d", done, lastDone)
		}
		lastDone, lastTotal = done, total
	}))
	if err != nil || !rep.OK() {
		t.Fatalf("replay: %+v %v", rep, err)
	}
	if calls == 0 || lastDone != int64(rep.Produced) || lastTotal != int64(rep.Recorded) {
		t.Fatalf("progress ended at %d/%d after %d calls; the replay produced %d of %d", lastDone, lastTotal, calls, rep.Produced, rep.Recorded)
	}
}
