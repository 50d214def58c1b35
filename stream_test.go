package rath_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// Stream yields a run's events in order, from run.started to
// run.finished, and the run's error last when it fails.
func TestStream_YieldsTheRunsEvents(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent := func(entries ...scripted.Entry) flow.Workflow {
		a, err := flow.NewAgent("Answer briefly.", flow.Scripted(entries...))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	in, _ := rt.NewUserSession(ctx, "Capital of France?")
	var run *rath.Run
	var types []string
	var got []events.Event
	for ev, err := range rt.Stream(ctx, "geo", agent(scripted.Entry{Content: "Paris."}), in, func(r *rath.Run) { run = r }) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
		types = append(types, ev.Type)
	}
	for i, ev := range got {
		if ev.RunID != run.ID || (i > 0 && ev.Seq <= got[i-1].Seq) {
			t.Fatalf("event %d out of order or of another run: %+v", i, ev)
		}
	}
	if run == nil || run.Output == nil || len(types) < 3 || types[0] != events.TypeRunStarted || types[len(types)-1] != events.TypeRunFinished {
		t.Fatalf("run %+v, events %v", run, types)
	}
	// The run's own events, and nothing else, are what the store holds for it.
	recorded, _ := rt.Store().ReadRun(ctx, run.ID)
	if len(recorded) != len(types) {
		t.Fatalf("yielded %d events, the run has %d", len(types), len(recorded))
	}

	// A failing run: its events, then its error.
	in2, _ := rt.NewUserSession(ctx, "again")
	var gotErr error
	n := 0
	for ev, err := range rt.Stream(ctx, "geo", agent(), in2, nil) {
		if err != nil {
			gotErr = err
			continue
		}
		n++
		_ = ev
	}
	if gotErr == nil || n < 2 {
		t.Fatalf("failing run: %d events, err %v", n, gotErr)
	}
}

// A run that suspends for a person yields every event it recorded, its
// request last, then the *flow.WaitingError; no run.finished.
func TestStream_ARunThatWaits(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	noop, err := flow.NewTool("noop", "Do nothing.", func(context.Context, *session.Session, struct{}) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // the follower stops when Start returns: its last events must still come
		a, err := flow.NewAgent("", flow.Scripted(scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "n1", Name: "noop", Arguments: `{}`}}}),
			flow.WithTools(noop), flow.WithApproval("noop", flow.Always()))
		if err != nil {
			t.Fatal(err)
		}
		in, _ := rt.NewUserSession(ctx, "go")
		var run *rath.Run
		var types []string
		var gotErr error
		for ev, err := range rt.Stream(ctx, "wait", a, in, func(r *rath.Run) { run = r }) {
			if err != nil {
				gotErr = err
				continue
			}
			types = append(types, ev.Type)
		}
		if !errors.Is(gotErr, flow.ErrWaiting) || len(types) == 0 || types[len(types)-1] != events.TypeApprovalRequested {
			t.Fatalf("events %v, err %v", types, gotErr)
		}
		recorded, _ := rt.Store().ReadRun(ctx, run.ID)
		if len(recorded) != len(types) {
			t.Fatalf("yielded %d events, the run has %d", len(types), len(recorded))
		}
	}
}
