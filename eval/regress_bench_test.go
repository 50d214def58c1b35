package eval_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// supportAgent is the agent of the regression benchmark and example: its
// system prompt is the named agent's prompt as it is now.
func supportAgent(tb testing.TB, prompts map[string]string, name string) *flow.Agent {
	tb.Helper()
	ok := model.ClientFunc(func(context.Context, model.Request) (model.Response, error) {
		return model.Response{Content: "noted", Usage: events.Usage{TotalTokens: 3}}, nil
	})
	p, err := flow.ResolveProvider(flow.Provider{Client: ok}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := flow.NewAgent(prompts[name], p)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// recordSupport records n runs, every fourth one of agent "triage", the
// others of agent "writer", and returns them as regression cases.
func recordSupport(tb testing.TB, ctx context.Context, rt *rath.Runtime, prompts map[string]string, n int) []eval.RegressCase {
	tb.Helper()
	cases := make([]eval.RegressCase, 0, n)
	for i := range n {
		name := "writer"
		if i%4 == 0 {
			name = "triage"
		}
		input, err := rt.NewUserSession(ctx, "ticket")
		if err != nil {
			tb.Fatal(err)
		}
		run, err := rt.Start(ctx, "support", supportAgent(tb, prompts, name), input, rath.WithParams(map[string]string{"agent": name}))
		if err != nil {
			tb.Fatal(err)
		}
		cases = append(cases, eval.RegressCase{Run: run.ID})
	}
	return cases
}

// nowWorkflow rebuilds a run's agent with the prompts as they are now.
func nowWorkflow(tb testing.TB, rt *rath.Runtime, prompts map[string]string) func(context.Context, string) (flow.Workflow, error) {
	return func(ctx context.Context, run string) (flow.Workflow, error) {
		started, err := rt.RunStarted(ctx, run)
		if err != nil {
			return nil, err
		}
		return supportAgent(tb, prompts, started.Params["agent"]), nil
	}
}

// BenchmarkRegress200 checks 200 recorded runs with the workflow
// unchanged (all the same), then with the prompt of the agent 50 of them
// used changed (exactly those 50 need live answers, each at its first
// model request), and reports runs/s of each, re-executing one run at a
// time and four at a time (RegressOptions.Parallel).
func BenchmarkRegress200(b *testing.B) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	prompts := map[string]string{"triage": "You sort tickets.", "writer": "You write replies."}
	cases := recordSupport(b, ctx, rt, prompts, 200)
	changed := map[string]string{"triage": "You sort tickets, urgent ones first.", "writer": prompts["writer"]}
	for _, parallel := range []int{1, 4} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			var same, changedTime time.Duration
			for range b.N {
				t0 := time.Now()
				rep, err := eval.Regress(ctx, rt, cases, eval.RegressOptions{Workflow: nowWorkflow(b, rt, prompts), Parallel: parallel})
				if err != nil || rep.Same != 200 {
					b.Fatalf("unchanged: %+v %v", rep, err)
				}
				same += time.Since(t0)
				t0 = time.Now()
				rep, err = eval.Regress(ctx, rt, cases, eval.RegressOptions{Workflow: nowWorkflow(b, rt, changed), Parallel: parallel})
				if err != nil || rep.Same != 150 || rep.NeedsLive != 50 {
					b.Fatalf("changed prompt: %d same, %d need live answers, %v", rep.Same, rep.NeedsLive, err)
				}
				changedTime += time.Since(t0)
			}
			b.ReportMetric(float64(200*b.N)/same.Seconds(), "same-runs/s")
			b.ReportMetric(float64(200*b.N)/changedTime.Seconds(), "changed-runs/s")
		})
	}
}
