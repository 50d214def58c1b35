package flow_test

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
	"github.com/gorath/rath/session"
)

// fakeModel answers each call with the next step; it records requests.
type fakeModel struct {
	mu    sync.Mutex
	steps []func(model.Request) (model.Response, error)
	reqs  []model.Request
}

func (f *fakeModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if len(f.steps) == 0 {
		return model.Response{}, &model.Error{Kind: model.KindScript, Provider: "fake", Err: errors.New("no more steps")}
	}
	step := f.steps[0]
	f.steps = f.steps[1:]
	return step(req)
}

func (f *fakeModel) requests() []model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]model.Request(nil), f.reqs...)
}

func say(text string) func(model.Request) (model.Response, error) {
	return func(model.Request) (model.Response, error) {
		return model.Response{Content: text, Usage: events.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}, nil
	}
}

func callTools(calls ...events.ToolCall) func(model.Request) (model.Response, error) {
	return func(model.Request) (model.Response, error) {
		return model.Response{ToolCalls: calls, Usage: events.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}, nil
	}
}

func fail(kind model.ErrorKind, retryAfter time.Duration) func(model.Request) (model.Response, error) {
	return func(model.Request) (model.Response, error) {
		return model.Response{}, &model.Error{Kind: kind, Provider: "fake", RetryAfter: retryAfter, Err: errors.New(string(kind))}
	}
}

func tc(id, name, args string) events.ToolCall {
	return events.ToolCall{ID: id, Name: name, Arguments: args}
}

func MustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

func provider(t *testing.T, f *fakeModel, mod func(*flow.Provider)) *flow.Provider {
	t.Helper()
	p := flow.Provider{Client: f, Model: "fake-1", Retry: flow.RetryPolicy{InitialBackoff: time.Millisecond}}
	if mod != nil {
		mod(&p)
	}
	rp, err := flow.ResolveProvider(p, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

type addArgs struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b"`
}

func adder(t *testing.T, opts ...flow.ToolOption) flow.Tool {
	t.Helper()
	tool, err := flow.NewTool("add", "Add two integers.", func(ctx context.Context, s *session.Session, a addArgs) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func typesOf(t *testing.T, rt *rath.Runtime, stream string) []string {
	t.Helper()
	evs, err := rt.Store().ReadStream(t.Context(), stream, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

func count(list []string, want string) int {
	n := 0
	for _, s := range list {
		if s == want {
			n++
		}
	}
	return n
}

func TestAgent_ToolRoundTrip(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){
		callTools(tc("c1", "add", `{"a":2,"b":40}`)),
		say("The sum is 42."),
	}}
	agent, err := flow.NewAgent("You add numbers.", provider(t, f, nil), flow.WithTools(adder(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.NewUserSession(ctx, "What is 2+40?")
	out, err := agent.Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	chunks := out.Chunks()
	if len(chunks) != 4 {
		t.Fatalf("chunks = %+v", chunks)
	}
	if chunks[1].Role != "assistant" || len(chunks[1].ToolCalls) != 1 || chunks[1].Author != "root" {
		t.Fatalf("assistant chunk = %+v", chunks[1])
	}
	if chunks[2].Role != "tool_result" || chunks[2].Content != "42" || chunks[2].ToolCallID != "c1" {
		t.Fatalf("tool result = %+v", chunks[2])
	}
	if chunks[3].Content != "The sum is 42." {
		t.Fatalf("final = %+v", chunks[3])
	}
	// The second request carried the head, the question, the call and its result.
	reqs := f.requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 4 || reqs[1].Messages[0].Role != "system" || reqs[1].Tools[0].Name != "add" {
		t.Fatalf("second request = %+v", reqs[1])
	}
	if !strings.Contains(string(reqs[0].Tools[0].Parameters), `"first addend"`) {
		t.Fatalf("schema lost the description: %s", reqs[0].Tools[0].Parameters)
	}
	types := typesOf(t, rt, out.ID())
	for typ, n := range map[string]int{"provider.called": 2, "tool.called": 1, "tool.returned": 1, "workflow.entered": 1, "workflow.exited": 1} {
		if got := count(types, typ); got != n {
			t.Fatalf("%s recorded %d times, want %d: %v", typ, got, n, types)
		}
	}
	if u := out.Usage(); u.TotalTokens != 27 || u.Calls != 2 {
		t.Fatalf("usage = %+v", u)
	}
	loaded, _ := rt.Session(ctx, out.ID())
	if loaded.Usage() != out.Usage() || loaded.Version() != out.Version() {
		t.Fatalf("loaded %+v v%d, handle %+v v%d", loaded.Usage(), loaded.Version(), out.Usage(), out.Version())
	}
	// The provider call's request and response are blobs.
	evs, _ := rt.Store().Read(ctx, eventlog.Query{Stream: out.ID(), Types: []string{"provider.called"}})
	p, _ := evs[0].Decode()
	pc := p.(*events.ProviderCalled)
	if _, err := rt.Store().GetBlob(ctx, pc.RequestRef); err != nil {
		t.Fatalf("request blob: %v", err)
	}
	resp, err := rt.Store().GetBlob(ctx, pc.ResponseRef)
	if err != nil || !strings.Contains(string(resp), `"add"`) {
		t.Fatalf("response blob = %s, %v", resp, err)
	}
}

func TestAgent_BadToolCallsBecomeTypedResults(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	failing, _ := flow.NewTool("fail", "Always fails.", func(context.Context, *session.Session, struct{}) (string, error) {
		return "", errors.New("disk on fire")
	})
	slow, _ := flow.NewTool("slow", "Never returns in time.", func(ctx context.Context, _ *session.Session, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, flow.WithToolTimeout(20*time.Millisecond))
	stuck, _ := flow.NewTool("stuck", "Ignores its context.", func(context.Context, *session.Session, struct{}) (string, error) {
		time.Sleep(time.Hour)
		return "", nil
	}, flow.WithToolTimeout(20*time.Millisecond))
	boom, _ := flow.NewTool("boom", "Panics.", func(context.Context, *session.Session, struct{}) (string, error) {
		panic("kaboom")
	})
	tests := []struct {
		call events.ToolCall
		kind string
	}{
		{tc("u", "nope", `{}`), flow.ToolErrUnknown},
		{tc("j", "add", `{"a":1,`), flow.ToolErrBadJSON},
		{tc("s", "add", `{"a":"one","b":2}`), flow.ToolErrSchema},
		{tc("m", "add", `{"a":1}`), flow.ToolErrSchema},
		{tc("f", "fail", `{}`), flow.ToolErrFailed},
		{tc("t", "slow", `{}`), flow.ToolErrTimeout},
		{tc("k", "stuck", `{}`), flow.ToolErrTimeout},
		{tc("p", "boom", `{}`), flow.ToolErrPanic},
	}
	var calls []events.ToolCall
	for _, tt := range tests {
		calls = append(calls, tt.call)
	}
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){callTools(calls...), say("handled")}}
	agent, err := flow.NewAgent("", provider(t, f, nil), flow.WithTools(adder(t), failing, slow, stuck, boom))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.NewUserSession(ctx, "go")
	out, err := agent.Forward(ctx, s)
	if err != nil {
		t.Fatalf("the loop must go on after bad tool calls: %v", err)
	}
	results := out.Chunks()[2 : 2+len(tests)]
	for i, tt := range tests {
		r := results[i]
		if r.ToolCallID != tt.call.ID || r.Meta["error_kind"] != tt.kind {
			t.Errorf("call %s: result %+v, want error kind %s", tt.call.ID, r, tt.kind)
		}
	}
	if last, _ := out.Last(); last.Content != "handled" {
		t.Fatalf("last = %+v", last)
	}
	evs, _ := rt.Store().Read(ctx, eventlog.Query{Stream: out.ID(), Types: []string{"tool.returned"}})
	if len(evs) != len(tests) {
		t.Fatalf("tool.returned events = %d", len(evs))
	}
	p, _ := evs[0].Decode()
	if p.(*events.ToolReturned).ErrorKind != flow.ToolErrUnknown {
		t.Fatalf("first evidence = %+v", p)
	}
}

func TestAgent_ParallelSafeToolsRunConcurrently(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	// Two calls that each wait for the other: only concurrent execution
	// lets both finish before the timeout.
	var wg sync.WaitGroup
	wg.Add(2)
	meet, _ := flow.NewTool("meet", "Wait for the other caller.", func(ctx context.Context, _ *session.Session, a struct {
		Who string `json:"who"`
	}) (string, error) {
		wg.Done()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return "met " + a.Who, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, flow.WithParallelSafe(), flow.WithToolTimeout(5*time.Second))
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){
		callTools(tc("1", "meet", `{"who":"alice"}`), tc("2", "meet", `{"who":"bob"}`)),
		say("done"),
	}}
	agent, _ := flow.NewAgent("", provider(t, f, nil), flow.WithTools(meet))
	s, _ := rt.NewUserSession(ctx, "meet")
	out, err := agent.Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	cs := out.Chunks()
	if cs[2].Content != "met alice" || cs[3].Content != "met bob" {
		t.Fatalf("results out of call order or not concurrent: %q %q", cs[2].Content, cs[3].Content)
	}
}

func TestAgent_RoundCapIsRecordedAndReturned(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	var steps []func(model.Request) (model.Response, error)
	for i := range 3 {
		steps = append(steps, callTools(tc(fmt.Sprint("c", i), "add", `{"a":1,"b":1}`)))
	}
	f := &fakeModel{steps: steps}
	agent, _ := flow.NewAgent("", provider(t, f, nil), flow.WithTools(adder(t)), flow.WithMaxRounds(3))
	s, _ := rt.NewUserSession(ctx, "loop forever")
	out, err := agent.Forward(ctx, s)
	var mr *flow.MaxRoundsError
	if !errors.As(err, &mr) || mr.Rounds != 3 {
		t.Fatalf("err = %v, want MaxRoundsError(3)", err)
	}
	if out == nil || out.Len() != 1+3*2 {
		t.Fatalf("session after cap = %v", out)
	}
	if count(typesOf(t, rt, out.ID()), "agent.capped") != 1 {
		t.Fatal("cap not recorded")
	}
}

func TestProvider_RetriesRetryableFailures(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){
		fail(model.KindRateLimit, 3*time.Second),
		fail(model.KindServer, 0),
		say("finally"),
	}}
	p := provider(t, f, nil)
	var waits []time.Duration
	flow.SetSleep(p, func(d time.Duration) { waits = append(waits, d) })
	agent, _ := flow.NewAgent("", p)
	s, _ := rt.NewUserSession(ctx, "hi")
	out, err := agent.Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 || waits[0] != 3*time.Second {
		t.Fatalf("waits = %v, want Retry-After 3s first", waits)
	}
	if waits[1] < time.Millisecond/2 || waits[1] > 3*time.Millisecond {
		t.Fatalf("second wait %v is not the jittered doubled backoff", waits[1])
	}
	evs, _ := rt.Store().Read(ctx, eventlog.Query{Stream: out.ID(), Types: []string{"provider.failed", "provider.called"}})
	var got []string
	for _, ev := range evs {
		p, _ := ev.Decode()
		switch e := p.(type) {
		case *events.ProviderFailed:
			got = append(got, fmt.Sprintf("failed:%s:%d:%v", e.ErrorKind, e.Attempt, e.WillRetry))
		case *events.ProviderCalled:
			got = append(got, fmt.Sprintf("called:%d", e.Attempt))
		}
	}
	if want := "[failed:rate_limit:1:true failed:server:2:true called:3]"; fmt.Sprint(got) != want {
		t.Fatalf("attempts = %v, want %s", got, want)
	}
}

func TestProvider_DoesNotRetryPermanentFailures(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){fail(model.KindBadRequest, 0), say("never")}}
	agent, _ := flow.NewAgent("", provider(t, f, nil))
	s, _ := rt.NewUserSession(ctx, "hi")
	_, err := agent.Forward(ctx, s)
	if model.KindOf(err) != model.KindBadRequest || len(f.requests()) != 1 {
		t.Fatalf("err = %v after %d calls", err, len(f.requests()))
	}
}

func TestProvider_BudgetStopsTheRun(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){
		callTools(tc("c1", "add", `{"a":1,"b":2}`)),
		say("over budget"),
	}}
	p := provider(t, f, func(p *flow.Provider) { p.Budget = flow.Budget{MaxCalls: 1} })
	agent, _ := flow.NewAgent("", p, flow.WithTools(adder(t)))
	s, _ := rt.NewUserSession(ctx, "hi")
	_, err := agent.Forward(ctx, s)
	var be *flow.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, flow.ErrBudget) || be.Limit != "calls" {
		t.Fatalf("err = %v, want a calls BudgetError", err)
	}
	evs, _ := rt.Store().Read(ctx, eventlog.Query{Types: []string{"provider.failed"}})
	if len(evs) != 1 || !strings.Contains(string(evs[0].Payload), `"error_kind":"budget"`) {
		t.Fatalf("budget stop not recorded: %v", evs)
	}
	if tokens, calls := p.Used(); calls != 1 || tokens != 15 {
		t.Fatalf("used = %d tokens, %d calls", tokens, calls)
	}
}

// streamer is a fake client that streams its answer in word deltas.
type streamer struct{ fakeModel }

func (s *streamer) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	resp, err := s.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	for _, w := range strings.SplitAfter(resp.Content, " ") {
		onDelta(model.Delta{Content: w})
	}
	return resp, nil
}

func TestAgent_StreamingDeliversDeltasAndAppendsOnce(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &streamer{fakeModel{steps: []func(model.Request) (model.Response, error){say("one two three")}}}
	var deltas []string
	p, err := flow.ResolveProvider(flow.Provider{Client: f}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := flow.NewAgent("", p, flow.WithStreaming(func(d model.Delta) { deltas = append(deltas, d.Content) }))
	s, _ := rt.NewUserSession(ctx, "count")
	out, err := agent.Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(deltas) != "[one  two  three]" {
		t.Fatalf("deltas = %q", deltas)
	}
	if out.Len() != 2 || out.Chunk(1).Content != "one two three" {
		t.Fatalf("chunks = %+v", out.Chunks())
	}
	if n := count(typesOf(t, rt, out.ID()), "chunk.appended"); n != 1 {
		t.Fatalf("assistant appended %d times", n)
	}
}
