package telemetry_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// fanout is the workflow the tests record: two reviewers in parallel (a
// fork and a merge), the first retrying a rate-limited call and calling a
// tool, then a lead.
type fanout struct {
	Reviewers *flow.Parallel
	Lead      *flow.Agent
}

func (f *fanout) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	s, err := flow.Forward(ctx, f.Reviewers, s)
	if err != nil {
		return s, err
	}
	return flow.Forward(ctx, f.Lead, s)
}

// leakedSecret stands for a key that a model echoed back; exports must
// redact it.
const leakedSecret = "sk-test-0123456789abcdef"

func newFanout(t *testing.T) *fanout {
	t.Helper()
	usage := &events.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}
	client := scripted.New(
		scripted.Entry{Agent: "root.reviewers.a", Error: &scripted.Failure{Kind: model.KindRateLimit, Status: 429, RetryAfterMS: 1, Message: "slow down"}},
		scripted.Entry{Agent: "root.reviewers.a", Model: "scripted-1", FinishReason: "tool_calls", Usage: usage,
			ToolCalls: []scripted.ToolCall{{ID: "a1", Name: "lookup", Arguments: `{"q":"login"}`}}},
		scripted.Entry{Agent: "root.reviewers.a", Content: "A: fine", FinishReason: "stop"},
		scripted.Entry{Agent: "root.reviewers.b", Content: "B: fine", FinishReason: "stop"},
		scripted.Entry{Agent: "root.lead", Content: "approved; the key was " + leakedSecret, FinishReason: "stop"},
	)
	temp := 0.25
	p, err := flow.ResolveProvider(flow.Provider{Vendor: flow.VendorScripted, Model: "scripted", Client: client, Temperature: &temp, MaxTokens: 256,
		Retry: flow.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}}, flow.ResolveOptions{ConfigPath: "-"})
	if err != nil {
		t.Fatal(err)
	}
	lookup, err := flow.NewTool("lookup", "Look a thing up.", func(ctx context.Context, s *session.Session, args struct {
		Q string `json:"q"`
	}) (string, error) {
		time.Sleep(3 * time.Millisecond)
		return "found " + args.Q, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	agent := func(name string, opts ...flow.AgentOption) *flow.Agent {
		a, err := flow.NewAgent("Review.", p, append(opts, flow.WithName(name))...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	return &fanout{Reviewers: flow.NewParallel(agent("a", flow.WithTools(lookup)), agent("b")), Lead: agent("lead")}
}

// recordRun opens a runtime in a temporary directory and records one run
// of the fan-out.
func recordRun(t *testing.T, rt *rath.Runtime) *rath.Run {
	t.Helper()
	id := "run-otel-test"
	ctx := context.Background()
	in, err := rt.NewUserSession(ctx, "Review the login change.")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "fanout", newFanout(t), in, rath.WithRunID(id))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func openRuntime(t *testing.T) *rath.Runtime {
	t.Helper()
	rt, err := rath.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// bySeq indexes a run's events by seq.
func bySeq(t *testing.T, rt *rath.Runtime, runID string) map[int64]events.Event {
	t.Helper()
	evs, err := rt.Store().ReadRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int64]events.Event{}
	for _, ev := range evs {
		m[ev.Seq] = ev
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// inRun appends to s in run id.
func inRun(s *eventlog.Store, id string) eventlog.Appender {
	return s.In(eventlog.Scope{Run: events.RunRef{ID: id, Seed: "seed"}})
}

func runStarted(id, input string) events.RunStarted {
	return events.RunStarted{Run: id, Workflow: "open", InputSession: input, Seed: "seed"}
}
