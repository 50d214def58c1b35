package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// echoModel answers from the request alone, so any number of runs and
// replays see the same answers: it calls the "count" tool until the
// conversation holds `rounds` tool results, then summarizes.
type echoModel struct{ rounds int }

func (m echoModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	if len(req.Tools) == 0 {
		return model.Response{Content: "summary of " + fmt.Sprint(len(req.Messages)) + " messages", Usage: events.Usage{TotalTokens: 7}}, nil
	}
	if req.ToolChoice != "" { // a selector
		done := false
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "counted") {
				done = true
			}
		}
		choice := "counter"
		if done {
			choice = "none"
		}
		return model.Response{ToolCalls: []events.ToolCall{{ID: "sel", Name: req.ToolChoice, Arguments: fmt.Sprintf(`{"name":%q}`, choice)}}}, nil
	}
	results := 0
	for _, msg := range req.Messages {
		if msg.Role == events.RoleToolResult {
			results++
		}
	}
	if results >= m.rounds {
		return model.Response{Content: fmt.Sprintf("counted %d for %s", results, req.Agent), Usage: events.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12}}, nil
	}
	return model.Response{ToolCalls: []events.ToolCall{{ID: fmt.Sprint("c", results), Name: "count", Arguments: fmt.Sprintf(`{"n":%d}`, results)}},
		Usage: events.Usage{PromptTokens: 9, CompletionTokens: 4, TotalTokens: 13}}, nil
}

func mustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

func provider(tb testing.TB, c model.Client) *flow.Provider {
	tb.Helper()
	p, err := flow.ResolveProvider(flow.Provider{Client: c}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

type countArgs struct {
	N int `json:"n"`
}

// team builds the workflow under test: a selector loop over a counter
// agent, then two reviewers in parallel, then a compressor.
type team struct {
	Counter   *flow.Agent
	Reviewers *flow.Parallel
	Squash    *flow.Compressor
	sel       *flow.Selector
}

func (t *team) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	for {
		next, err := t.sel.Select(ctx, s, flow.Candidate{Name: "counter", Description: "counts", Workflow: t.Counter})
		if err != nil {
			return s, err
		}
		if next == flow.Empty {
			break
		}
		if s, err = flow.Forward(ctx, next, s); err != nil {
			return s, err
		}
	}
	s, err := flow.Forward(ctx, t.Reviewers, s)
	if err != nil {
		return s, err
	}
	return flow.Forward(ctx, t.Squash, s)
}

func newTeam(tb testing.TB, p *flow.Provider, counterPrompt string) *team {
	tb.Helper()
	count, err := flow.NewTool("count", "Count.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) {
		return fmt.Sprint("n=", a.N), nil
	}, flow.WithParallelSafe())
	if err != nil {
		tb.Fatal(err)
	}
	counter, _ := flow.NewAgent(counterPrompt, p, flow.WithTools(count))
	r1, _ := flow.NewAgent("review A", p, flow.WithName("a"))
	r2, _ := flow.NewAgent("review B", p, flow.WithName("b"))
	return &team{Counter: counter, Reviewers: flow.NewParallel(r1, r2), Squash: flow.NewCompressor(p, 1), sel: flow.NewSelector(p)}
}

func record(t *testing.T, rt *rath.Runtime, counterPrompt string) *rath.Run {
	t.Helper()
	ctx := t.Context()
	input, err := rt.NewUserSession(ctx, "count to three")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "team", newTeam(t, provider(t, echoModel{3}), counterPrompt), input)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestRun_ReproducesEveryEvent(t *testing.T) {
	rt := mustOpen(t)
	run := record(t, rt, "You count.")
	// Replay with a provider whose client must never be called.
	rep, err := replay.Run(t.Context(), rt, run.ID, newTeam(t, provider(t, failingModel{}), "You count."))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("replay diverged: %v", rep)
	}
	if rep.Matched != rep.Recorded || rep.Produced != rep.Recorded || rep.Recorded < 40 {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Answered == 0 {
		t.Fatal("nothing was answered from the record")
	}
}

type failingModel struct{}

func (failingModel) Complete(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errors.New("the replay called the model")
}

func TestRun_ReportsAChangedPromptAtItsSeq(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	run := record(t, rt, "You count.")
	rep, err := replay.Run(ctx, rt, run.ID, newTeam(t, provider(t, failingModel{}), "You count carefully."))
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Divergence
	if d == nil || d.Class != replay.ClassMismatch || !strings.Contains(d.Hint, "prompt changed") || !strings.Contains(d.Diff, "You count carefully.") {
		t.Fatalf("divergence = %+v", d)
	}
	// It points at the counter's first recorded model call.
	want := firstCall(t, rt, run.ID, "root.counter")
	if d.Seq != want {
		t.Fatalf("divergence at seq %d, want %d (the counter's first call)", d.Seq, want)
	}
	// And names that event's place in its stream, not "v0".
	if d.Version == 0 || d.Stream == "" || !strings.Contains(d.Error(), fmt.Sprintf("%s v%d)", d.Stream, d.Version)) {
		t.Fatalf("divergence place: %v", d)
	}
	if !errors.Is(d, replay.ErrDiverged) {
		t.Fatal("divergence does not match ErrDiverged")
	}
}

func firstCall(t *testing.T, rt *rath.Runtime, runID, agent string) int64 {
	t.Helper()
	evs, _ := rt.Store().Read(t.Context(), eventlog.Query{RunID: runID, Types: []string{events.TypeProviderCalled}})
	for _, ev := range evs {
		p, _ := ev.Decode()
		if p.(*events.ProviderCalled).Agent == agent {
			return ev.Seq
		}
	}
	t.Fatalf("no call by %s", agent)
	return 0
}

func TestRun_ReportsAChangedCodePath(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	run := record(t, rt, "You count.")
	// The new code skips the compressor.
	tm := newTeam(t, provider(t, failingModel{}), "You count.")
	shorter := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		for {
			next, err := tm.sel.Select(ctx, s, flow.Candidate{Name: "counter", Description: "counts", Workflow: tm.Counter})
			if err != nil || next == flow.Empty {
				return s, err
			}
			if s, err = flow.Forward(ctx, next, s); err != nil {
				return s, err
			}
		}
	})
	rep, err := replay.Run(ctx, rt, run.ID, shorter)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Matched >= rep.Recorded {
		t.Fatalf("a changed code path reproduced: %v", rep)
	}
	t.Logf("%v", rep)
}

func TestRun_UnknownRun(t *testing.T) {
	rt := mustOpen(t)
	if _, err := replay.Run(t.Context(), rt, "run-nope", flow.Empty); !errors.Is(err, replay.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestRun_NowAndRandReplayTheRecordedValues(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	var seen []string
	wf := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		now, err := flow.Now(ctx)
		if err != nil {
			return s, err
		}
		r, err := flow.Rand(ctx)
		if err != nil {
			return s, err
		}
		line := fmt.Sprintf("at %s drew %d", now.Format(time.RFC3339Nano), r.Uint64())
		seen = append(seen, line)
		return s.Append(ctx, events.Chunk{Role: events.RoleAssistant, Content: line})
	})
	input, _ := rt.NewUserSession(ctx, "roll")
	run, err := rt.Start(ctx, "roll", wf, input)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	rep, err := replay.Run(ctx, rt, run.ID, wf)
	if err != nil || !rep.OK() {
		t.Fatalf("replay: %v %v", rep, err)
	}
	if len(seen) != 2 || seen[0] != seen[1] {
		t.Fatalf("the replay saw other values: %q", seen)
	}
}

// twoAtOnce asks for two parallel-safe calls in one round, then answers.
type twoAtOnce struct{}

func (twoAtOnce) Complete(_ context.Context, req model.Request) (model.Response, error) {
	for _, m := range req.Messages {
		if m.Role == events.RoleToolResult {
			return model.Response{Content: "both done"}, nil
		}
	}
	return model.Response{ToolCalls: []events.ToolCall{
		{ID: "a", Name: "nap", Arguments: `{"n":3}`},
		{ID: "b", Name: "nap", Arguments: `{"n":0}`},
	}}, nil
}

// Parallel-safe calls reach the oracle in any order; the replay must
// match them by call id, not by arrival.
func TestRun_ParallelToolCallsInAnyOrder(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	mk := func() *flow.Agent {
		nap, _ := flow.NewTool("nap", "Sleep n ms.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) {
			time.Sleep(time.Duration(a.N) * time.Millisecond)
			return fmt.Sprint("slept ", a.N), nil
		}, flow.WithParallelSafe())
		a, _ := flow.NewAgent("", provider(t, twoAtOnce{}), flow.WithTools(nap))
		return a
	}
	input, _ := rt.NewUserSession(ctx, "nap twice")
	run, err := rt.Start(ctx, "naps", mk(), input)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		rep, err := replay.Run(ctx, rt, run.ID, mk())
		if err != nil || !rep.OK() {
			t.Fatalf("replay: %v %v", rep, err)
		}
	}
}

// turnModel answers each call with the next of its answers, whatever the
// request: two branches sending the same request get different answers.
type turnModel struct {
	mu sync.Mutex
	n  int
}

func (m *turnModel) Complete(context.Context, model.Request) (model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return model.Response{Content: fmt.Sprintf("critique %d", m.n)}, nil
}

func TestReplay_ParallelBranchesOfOneAgent(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	build := func(c model.Client) flow.Workflow {
		critic, err := flow.NewAgent("Criticize.", provider(t, c), flow.WithName("critic"))
		if err != nil {
			t.Fatal(err)
		}
		return flow.NewParallel(critic, critic, flow.Named("critic", critic))
	}
	in, _ := rt.NewUserSession(ctx, "review this")
	run, err := rt.Start(ctx, "critics", build(&turnModel{}), in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		rep, err := replay.Run(ctx, rt, run.ID, build(failingModel{}))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Matched != rep.Recorded {
			t.Fatalf("replay %d of unchanged code: %v", i, rep)
		}
	}
	evs, err := rt.Store().ReadRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == events.TypeProviderCalled {
			p, _ := ev.Decode()
			paths[p.(*events.ProviderCalled).Agent] = true
		}
	}
	// The first branch keeps the path a lone critic would have.
	for _, want := range []string{"root.critic", "root.critic1", "root.critic2"} {
		if !paths[want] {
			t.Fatalf("paths %v, want %s among them", paths, want)
		}
	}
}
