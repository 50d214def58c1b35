package replay_test

import (
	"errors"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
)

// A counterfactual continues one agent: a run of two agents in sequence
// is refused with a *NotOneAgentError naming the run and its workflow,
// and no run is started.
func TestCounterfactual_SeveralAgentsRefused(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	first, err := flow.NewAgent("You draft.", provider(t, echoModel{0}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := flow.NewAgent("You check.", provider(t, echoModel{0}))
	if err != nil {
		t.Fatal(err)
	}
	team := flow.NewSequential(first, second)
	input, _ := rt.NewUserSession(ctx, "draft and check")
	run, err := rt.Start(ctx, "team", team, input)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := rt.Store().Read(ctx, eventlog.Query{RunID: run.ID, Types: []string{events.TypeProviderCalled}})
	if err != nil || len(calls) != 2 {
		t.Fatalf("%d model calls, %v", len(calls), err)
	}
	cf, err := replay.NewCounterfactual(ctx, rt, run.ID, calls[0].Seq, replay.Replacement{Answer: &model.Response{Content: "another draft"}})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := rt.Store().Head(ctx)
	next, err := cf.Continue(ctx, rt, team, false)
	var one *replay.NotOneAgentError
	if !errors.As(err, &one) || !errors.Is(err, replay.ErrCounterfactual) || one.Run != run.ID || one.Workflow != "team" || next != nil {
		t.Fatalf("Continue: %v (%T), run %v", err, err, next)
	}
	if after, _ := rt.Store().Head(ctx); after.Seq != before.Seq {
		t.Errorf("a refused counterfactual wrote %d events", after.Seq-before.Seq)
	}
}
