package dossier_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// loopModel calls the step tool until the conversation holds `rounds`
// results, then answers.
type loopModel struct{ rounds int }

func (m loopModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	n := count(req, events.RoleToolResult)
	if n >= m.rounds {
		return model.Response{Content: fmt.Sprintf("done after %d steps", n), Usage: usage(100, 5)}, nil
	}
	return model.Response{Content: fmt.Sprintf("thinking about step %d", n),
		ToolCalls: []events.ToolCall{call(fmt.Sprint("c", n), "step", fmt.Sprintf(`{"n":%d}`, n))}, Usage: usage(100, 10)}, nil
}

// recordLoop records a run of one agent looping `rounds` times: five
// events per round.
func recordLoop(tb testing.TB, rt *rath.Runtime, rounds int) string {
	tb.Helper()
	ctx := context.Background()
	step, err := flow.NewTool("step", "Take a step.", func(_ context.Context, _ *session.Session, a struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprintf("step %d taken: %s", a.N, strings.Repeat("output ", 20)), nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: loopModel{rounds}, Model: "loop-1"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/nonexistent"})
	if err != nil {
		tb.Fatal(err)
	}
	agent, err := flow.NewAgent("You take steps.", p, flow.WithTools(step), flow.WithMaxRounds(rounds+1))
	if err != nil {
		tb.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, "Take the steps.")
	if err != nil {
		tb.Fatal(err)
	}
	run, err := rt.Start(ctx, "loop", agent, input, rath.WithRunID(fmt.Sprint("run-loop-", rounds)))
	if err != nil {
		tb.Fatal(err)
	}
	return run.ID
}

// A long agent loop renders in size linear in its events: each request
// shows only what it added to the previous one, and a fork does not
// repeat its parent's transcript.
func TestHTML_SizeGrowsLinearly(t *testing.T) {
	rt := mustOpen(t)
	size := map[int]int{}
	for _, rounds := range []int{60, 120} {
		run := recordLoop(t, rt, rounds)
		d, err := dossier.Build(t.Context(), rt, run, dossier.Options{SkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Events) < 5*rounds {
			t.Fatalf("%d rounds recorded only %d events", rounds, len(d.Events))
		}
		size[rounds] = len(render(t, d, "html"))
	}
	// Quadratic growth would give a ratio near 4.
	if ratio := float64(size[120]) / float64(size[60]); ratio > 2.4 {
		t.Fatalf("HTML grows %.2f× for 2× the rounds (%d → %d bytes)", ratio, size[60], size[120])
	}
}

func BenchmarkBuildHTML(b *testing.B) {
	rt := mustOpen(b)
	run := recordLoop(b, rt, 100)
	ctx := context.Background()
	var bytes int
	for b.Loop() {
		d, err := dossier.Build(ctx, rt, run, dossier.Options{SkipVerify: true})
		if err != nil {
			b.Fatal(err)
		}
		var sb strings.Builder
		if err := d.HTML(&sb); err != nil {
			b.Fatal(err)
		}
		bytes = sb.Len()
	}
	b.ReportMetric(float64(bytes), "html-bytes")
}
