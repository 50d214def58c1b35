package rath_test

import (
	"errors"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
)

// run.started, carried by the run's first append, still opens the run's
// events, and a run started twice is refused before anything of the
// second start is written.
func TestStart_RunStartedOpensTheRunAndASecondStartWritesNothing(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}, scripted.Entry{Content: "Lyon."}))
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(ctx, "Capital of France?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "geo", agent, in, rath.WithRunID("run-once"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().ReadRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 3 || evs[0].Type != events.TypeRunStarted || evs[1].Seq != evs[0].Seq+1 || evs[len(evs)-1].Type != events.TypeRunFinished {
		t.Fatalf("run events %v", types(evs))
	}
	// The same run id again: refused as a conflict, and nothing of the
	// second start lands.
	in2, _ := rt.NewUserSession(ctx, "again")
	head, _ := rt.Store().Head(ctx)
	_, err = rt.Start(ctx, "geo", agent, in2, rath.WithRunID("run-once"))
	if !errors.Is(err, events.ErrConflict) {
		t.Fatalf("second start: err = %v, want a conflict", err)
	}
	if again, _ := rt.Store().Head(ctx); again.Seq != head.Seq {
		t.Fatalf("the refused start wrote %d events", again.Seq-head.Seq)
	}
}

// run.started costs no commit of its own: a workflow that appends
// nothing records its run in one commit, run.started riding with
// run.finished.
func TestStart_AWorkflowThatAppendsNothing(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	in, err := rt.NewUserSession(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	before := rt.Store().Stats()
	run, err := rt.Start(ctx, "quiet", flow.Empty, in)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().ReadRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := types(evs); len(got) != 2 || got[0] != events.TypeRunStarted || got[1] != events.TypeRunFinished {
		t.Fatalf("run events %v", got)
	}
	if n := rt.Store().Stats().Commits - before.Commits; n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
}

func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
