package rath_test

import (
	"errors"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

// A runtime that never registered a run's workflow rebuilds it from the
// spec its run.started recorded, and the rebuilt workflow replays the run;
// a run with no description is an unknown workflow.
func TestRuntime_RecordedWorkflow(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}))
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(ctx, "Capital of France?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "capitals", agent, in)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()

	fresh, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.Workflow("capitals"); !errors.Is(err, rath.ErrUnknownWorkflow) {
		t.Fatalf("registered in a fresh runtime: %v", err)
	}
	wf, err := fresh.RecordedWorkflow(ctx, run.ID, rath.ReplayMode)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(ctx, fresh, run.ID, wf)
	if err != nil || !rep.OK() {
		t.Fatalf("replay of the rebuilt workflow: %v %v", rep, err)
	}
	if _, err := fresh.RecordedWorkflow(ctx, "run-nosuch", rath.ReplayMode); err == nil {
		t.Fatal("an unknown run rebuilt")
	}
}
