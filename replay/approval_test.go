package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// gatedCounter is echoModel's counting agent whose every call of "count"
// needs approval (or the calls policy picks).
func gatedCounter(tb testing.TB, rounds int, policy flow.Policy) *flow.Agent {
	tb.Helper()
	count, err := flow.NewTool("count", "Count.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) {
		return fmt.Sprint("n=", a.N), nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := flow.NewAgent("You count.", provider(tb, echoModel{rounds}), flow.WithTools(count), flow.WithApproval("count", policy))
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func waitingOn(t *testing.T, err error) []string {
	t.Helper()
	var we *flow.WaitingError
	if !errors.As(err, &we) || !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("got %v, want a *flow.WaitingError", err)
	}
	return we.Requests
}

func decide(t *testing.T, rt *rath.Runtime, id string, d approval.Decision) {
	t.Helper()
	if _, err := approval.Decide(t.Context(), rt.Store(), id, d, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func runStatus(t *testing.T, rt *rath.Runtime, run string) string {
	t.Helper()
	r, err := rt.Reader().Run(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

func mustReplay(t *testing.T, rt *rath.Runtime, run string, wf flow.Workflow) {
	t.Helper()
	rep, err := replay.Run(t.Context(), rt, run, wf)
	if err != nil || !rep.OK() {
		t.Fatalf("replay: %v %v", rep, err)
	}
}

func TestApproval_SuspendsDecidesResumesAndReplays(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	wf := gatedCounter(t, 2, flow.Always())
	in, _ := rt.NewUserSession(ctx, "count")
	run, err := rt.Start(ctx, "gated", wf, in)
	ids := waitingOn(t, err)
	if len(ids) != 1 || runStatus(t, rt, run.ID) != "waiting" {
		t.Fatalf("requests %v, status %s", ids, runStatus(t, rt, run.ID))
	}
	pending, err := rt.Reader().PendingApprovals(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != ids[0] || pending[0].Tool != "count" || pending[0].Run != run.ID {
		t.Fatalf("pending %+v %v", pending, err)
	}
	// Resuming before anybody decided waits again and writes nothing.
	head, _ := rt.Store().Head(ctx)
	if _, err := replay.Resume(ctx, rt, run.ID, wf); !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("resume before the decision: %v", err)
	}
	if h, _ := rt.Store().Head(ctx); h.Seq != head.Seq+1 { // only run.resumed
		t.Fatalf("resume before the decision wrote %d events", h.Seq-head.Seq)
	}
	decide(t, rt, ids[0], approval.Decision{Decision: events.DecisionApproved, By: "alice", Note: "fine"})
	if st := runStatus(t, rt, run.ID); st != "running" {
		t.Fatalf("status after the decision: %s", st)
	}
	// Decided, not resumed: the decision is past the record's end, so a
	// replay still stops where the run did, waiting.
	if rep, err := replay.Run(ctx, rt, run.ID, wf); err != nil || !rep.OK() || rep.Finished || !slices.Equal(rep.Waiting, ids) || rep.Matched != rep.Recorded {
		t.Fatalf("replay, decided not resumed: %+v %v", rep, err)
	}
	// The second call needs its own approval: the run suspends again.
	_, err = replay.Resume(ctx, rt, run.ID, wf)
	second := waitingOn(t, err)
	if second[0] == ids[0] {
		t.Fatal("the second call reuses the first request's id")
	}
	decide(t, rt, second[0], approval.Decision{Decision: events.DecisionRejected, By: "bob", Note: "two is too many"})
	res, err := replay.Resume(ctx, rt, run.ID, wf)
	if err != nil {
		t.Fatal(err)
	}
	if st := runStatus(t, rt, run.ID); st != rath.RunOK {
		t.Fatalf("status %s", st)
	}
	var sawResult, sawRejection bool
	for _, c := range res.Output.Chunks() {
		if c.Role != events.RoleToolResult {
			continue
		}
		sawResult = sawResult || c.Content == "n=0"
		sawRejection = sawRejection || (strings.Contains(c.Content, "two is too many") && strings.Contains(c.Content, "bob") && c.Meta["error_kind"] == flow.ToolErrRejected)
	}
	if !sawResult || !sawRejection {
		t.Fatalf("transcript lacks the approved result or the rejection: %+v", res.Output.Chunks())
	}
	mustReplay(t, rt, run.ID, wf)
	if p, _ := rt.Reader().PendingApprovals(ctx); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
}

func TestApproval_EditedArgumentsAreWhatRuns(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	wf := gatedCounter(t, 1, flow.Always())
	in, _ := rt.NewUserSession(ctx, "count")
	run, err := rt.Start(ctx, "gated", wf, in)
	ids := waitingOn(t, err)
	if _, err := approval.Decide(ctx, rt.Store(), ids[0], approval.Decision{Decision: events.DecisionApproved, By: "alice", EditedArguments: `not json`}, time.Now()); !errors.Is(err, approval.ErrInvalid) {
		t.Fatalf("bad edit: %v", err)
	}
	decide(t, rt, ids[0], approval.Decision{Decision: events.DecisionApproved, By: "alice", EditedArguments: `{"n":41}`})
	res, err := replay.Resume(ctx, rt, run.ID, wf)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range res.Output.Chunks() {
		found = found || (c.Role == events.RoleToolResult && c.Content == "n=41")
	}
	if !found {
		t.Fatalf("the edited arguments did not run: %+v", res.Output.Chunks())
	}
	st, err := approval.Load(ctx, rt.Store(), ids[0])
	if err != nil || st.Request.Arguments != `{"n":0}` || st.Decision.EditedArguments != `{"n":41}` || st.Decision.EditedHash != approval.ArgsHash(`{"n":41}`) {
		t.Fatalf("the record does not hold both argument sets: %+v %+v %v", st.Request, st.Decision, err)
	}
	mustReplay(t, rt, run.ID, wf)
}

func TestApproval_PolicyPredicates(t *testing.T) {
	shell, err := flow.CommandMatches(`\brm\b|git push`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flow.CommandMatches(`(`); err == nil {
		t.Fatal("a bad pattern was accepted")
	}
	outside := flow.WriteOutside("src")
	for _, tc := range []struct {
		name string
		p    flow.Policy
		args string
		need bool
	}{
		{"ls", shell, `{"cmd":"ls -la"}`, false},
		{"rm", shell, `{"cmd":"cd x && rm -rf /"}`, true},
		{"push", shell, `{"cmd":"git push origin"}`, true},
		{"undecodable", shell, `{"cmd":7}`, true},
		{"inside", outside, `{"path":"src/a.go"}`, false},
		{"the dir itself", outside, `{"path":"./src"}`, false},
		{"outside", outside, `{"path":"main.go"}`, true},
		{"escape", outside, `{"path":"src/../../etc/passwd"}`, true},
		{"prefix", outside, `{"path":"srcx/a.go"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			rt := mustOpen(t)
			wf := gatedArgs(t, tc.args, tc.p)
			in, _ := rt.NewUserSession(ctx, "go")
			_, err := rt.Start(ctx, "p", wf, in)
			if got := errors.Is(err, flow.ErrWaiting); got != tc.need {
				t.Fatalf("waiting = %v (%v), want %v", got, err, tc.need)
			}
		})
	}
}

// Imposed policies (a worker operator's) are consulted first and cannot
// be loosened by the agent's own (a submitter's): a call either list
// stops is asked, with the imposed policy's reason and deadline when it
// is the imposed one that stops it; the replay rebuilds the same gate.
func TestApproval_ImposedPoliciesAreNotLoosened(t *testing.T) {
	rm, err := flow.CommandMatches(`\brm\b`)
	if err != nil {
		t.Fatal(err)
	}
	push, err := flow.CommandMatches(`git push`)
	if err != nil {
		t.Fatal(err)
	}
	never, always := flow.Never(), flow.Always()
	for _, tc := range []struct {
		name         string
		own, imposed *flow.Policy
		args         string
		need         bool
		reason       string // a substring of the request's reason
		withDeadline bool
	}{
		{"own never, imposed always", &never, &always, `{"cmd":"ls"}`, true, "every call", false},
		{"own always, imposed never", &always, &never, `{"cmd":"ls"}`, true, "every call", false},
		{"imposed only, not matched", nil, &rm, `{"cmd":"ls"}`, false, "", false},
		{"imposed only, matched", nil, &rm, `{"cmd":"rm -rf x"}`, true, `\brm\b`, false},
		{"both, the own matches", &rm, &push, `{"cmd":"rm x"}`, true, `\brm\b`, false},
		{"both, the imposed matches", &rm, &push, `{"cmd":"git push origin"}`, true, "git push", false},
		{"both, neither matches", &rm, &push, `{"cmd":"ls"}`, false, "", false},
		{"the imposed deadline decides", &always, ptr(always.WithDeadline(time.Hour, events.DecisionRejected)), `{"cmd":"ls"}`, true, "every call", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			rt := mustOpen(t)
			var opts []flow.AgentOption
			if tc.own != nil {
				opts = append(opts, flow.WithApproval("a*", *tc.own))
			}
			if tc.imposed != nil {
				opts = append(opts, flow.WithImposedApproval("act", *tc.imposed))
			}
			wf := gatedArgsWith(t, tc.args, opts...)
			in, _ := rt.NewUserSession(ctx, "go")
			run, err := rt.Start(ctx, "p", wf, in)
			if got := errors.Is(err, flow.ErrWaiting); got != tc.need {
				t.Fatalf("waiting = %v (%v), want %v", got, err, tc.need)
			}
			if !tc.need {
				mustReplay(t, rt, run.ID, wf)
				return
			}
			pending, err := rt.Reader().PendingApprovals(ctx)
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending %+v %v", pending, err)
			}
			if p := pending[0]; !strings.Contains(p.Reason, tc.reason) || (p.Deadline != 0) != tc.withDeadline {
				t.Fatalf("request %+v: want a reason saying %q, a deadline %v", p, tc.reason, tc.withDeadline)
			}
			mustReplay(t, rt, run.ID, wf)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func gatedArgs(tb testing.TB, args string, p flow.Policy) *flow.Agent {
	return gatedArgsWith(tb, args, flow.WithApproval("a*", p))
}

// gatedArgsWith is an agent whose one tool, "act", is called once with
// args, under the approval options given.
func gatedArgsWith(tb testing.TB, args string, gates ...flow.AgentOption) *flow.Agent {
	act, err := flow.NewSchemaTool("act", "Act.", json.RawMessage(`{"type":"object"}`), func(context.Context, *session.Session, json.RawMessage) (flow.ToolResult, error) {
		return flow.ToolResult{Content: "done"}, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := flow.NewAgent("", provider(tb, scriptedOnce(args)), append([]flow.AgentOption{flow.WithTools(act)}, gates...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func TestApproval_BadDecisionsChangeNothing(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	wf := gatedCounter(t, 1, flow.Always())
	in, _ := rt.NewUserSession(ctx, "count")
	_, err := rt.Start(ctx, "gated", wf, in)
	id := waitingOn(t, err)[0]
	decide(t, rt, id, approval.Decision{Decision: events.DecisionApproved, By: "alice"})
	head, _ := rt.Store().Head(ctx)
	for _, tc := range []struct {
		name string
		id   string
		d    approval.Decision
		want error
	}{
		{"twice", id, approval.Decision{Decision: events.DecisionRejected, By: "bob", Note: "no"}, approval.ErrDecided},
		{"unknown", "apr-nope", approval.Decision{Decision: events.DecisionApproved, By: "bob"}, approval.ErrUnknown},
	} {
		if _, err := approval.Decide(ctx, rt.Store(), tc.id, tc.d, time.Now()); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if h, _ := rt.Store().Head(ctx); h.Seq != head.Seq {
		t.Fatalf("bad decisions wrote %d events", h.Seq-head.Seq)
	}

	// A run that ends while it waits (canceled) leaves nothing to decide.
	in2, _ := rt.NewUserSession(ctx, "count")
	run2, err := rt.Start(ctx, "gated", wf, in2)
	id2 := waitingOn(t, err)[0]
	if _, err := rt.Store().Append(ctx, run2.ID, 1, events.RunFinished{Run: run2.ID, Status: "canceled"}); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Decide(ctx, rt.Store(), id2, approval.Decision{Decision: events.DecisionApproved, By: "bob"}, time.Now()); !errors.Is(err, approval.ErrInvalid) {
		t.Fatalf("deciding for a finished run: %v", err)
	}
	if p, _ := rt.Reader().PendingApprovals(ctx); len(p) != 0 {
		t.Fatalf("a finished run's request is listed as pending: %+v", p)
	}
}

func TestApproval_ConcurrentDecidersExactlyOneLands(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	wf := gatedCounter(t, 1, flow.Always())
	in, _ := rt.NewUserSession(ctx, "count")
	_, err := rt.Start(ctx, "gated", wf, in)
	id := waitingOn(t, err)[0]
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			d := approval.Decision{Decision: events.DecisionApproved, By: fmt.Sprint("person-", i)}
			if i%2 == 1 {
				d = approval.Decision{Decision: events.DecisionRejected, By: fmt.Sprint("person-", i), Note: "no"}
			}
			_, errs[i] = approval.Decide(ctx, rt.Store(), id, d, time.Now())
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, approval.ErrDecided):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	evs, _ := rt.Store().ReadStream(ctx, events.ApprovalStream(id), 1)
	if ok != 1 || len(evs) != 2 {
		t.Fatalf("%d decisions succeeded, the stream has %d events", ok, len(evs))
	}
}

func TestApproval_DeadlineDecidesTheDefault(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	wf := gatedCounter(t, 1, flow.Always().WithDeadline(300*time.Millisecond, events.DecisionRejected))
	in, _ := rt.NewUserSession(ctx, "count")
	run, err := rt.Start(ctx, "gated", wf, in)
	id := waitingOn(t, err)[0]
	time.Sleep(400 * time.Millisecond)
	head, _ := rt.Store().Head(ctx)
	if _, err := approval.Decide(ctx, rt.Store(), id, approval.Decision{Decision: events.DecisionApproved, By: "late"}, time.Now()); !errors.Is(err, approval.ErrExpired) {
		t.Fatalf("decision past the deadline: %v", err)
	}
	if h, _ := rt.Store().Head(ctx); h.Seq != head.Seq {
		t.Fatal("a refused decision wrote an event")
	}
	if _, err := replay.Resume(ctx, rt, run.ID, wf); err != nil {
		t.Fatal(err)
	}
	st, err := approval.Load(ctx, rt.Store(), id)
	if err != nil || st.Decision == nil || st.Decision.By != events.DecidedByDeadline || st.Decision.Decision != events.DecisionRejected {
		t.Fatalf("decision %+v %v", st.Decision, err)
	}
	mustReplay(t, rt, run.ID, wf)
}

// asker asks a person for a number in a workflow step, then appends it.
func asker() flow.Workflow {
	return flow.Named("ask", flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		ans, err := flow.Ask(ctx, s, flow.Question{Text: "How many?", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)})
		if err != nil {
			return s, err
		}
		return s.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "answer: " + string(ans)})
	}))
}

func TestApproval_QuestionAnsweredAgainstItsSchema(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	wf := asker()
	in, _ := rt.NewUserSession(ctx, "ask")
	run, err := rt.Start(ctx, "asker", wf, in)
	id := waitingOn(t, err)[0]
	head, _ := rt.Store().Head(ctx)
	for _, bad := range []approval.Decision{
		{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`{"n":"three"}`)},
		{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`{}`)},
		{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`{"n":`)},
		{Decision: events.DecisionApproved, By: "alice"},
		{Decision: events.DecisionAnswered, Answer: json.RawMessage(`{"n":3}`)}, // nobody
	} {
		if _, err := approval.Decide(ctx, rt.Store(), id, bad, time.Now()); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", bad, err)
		}
	}
	if h, _ := rt.Store().Head(ctx); h.Seq != head.Seq {
		t.Fatal("refused answers wrote events")
	}
	decide(t, rt, id, approval.Decision{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`{ "n": 3 }`)})
	res, err := replay.Resume(ctx, rt, run.ID, wf)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := res.Output.Last(); last.Content != `answer: {"n":3}` {
		t.Fatalf("last chunk %q", last.Content)
	}
	mustReplay(t, rt, run.ID, wf)
}

func TestApproval_QuestionFromAToolReplays(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	ask, err := flow.NewSchemaTool("act", "Ask first.", json.RawMessage(`{"type":"object"}`), func(ctx context.Context, s *session.Session, _ json.RawMessage) (flow.ToolResult, error) {
		ans, err := flow.Ask(ctx, s, flow.Question{Text: "Proceed?", Schema: json.RawMessage(`{"type":"boolean"}`)})
		if err != nil {
			return flow.ToolResult{}, err
		}
		return flow.ToolResult{Content: "person said " + string(ans)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := flow.NewAgent("", provider(t, scriptedOnce(`{}`)), flow.WithTools(ask))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := rt.NewUserSession(ctx, "go")
	run, err := rt.Start(ctx, "asker", wf, in)
	id := waitingOn(t, err)[0]
	decide(t, rt, id, approval.Decision{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`true`)})
	res, err := replay.Resume(ctx, rt, run.ID, wf)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range res.Output.Chunks() {
		found = found || c.Content == "person said true"
	}
	if !found {
		t.Fatalf("no answer in %+v", res.Output.Chunks())
	}
	mustReplay(t, rt, run.ID, wf)
}

// scriptedOnce calls "act" with args until the conversation holds a tool
// result, then stops.
type scriptedOnce string

func (m scriptedOnce) Complete(_ context.Context, req model.Request) (model.Response, error) {
	for _, msg := range req.Messages {
		if msg.Role == events.RoleToolResult {
			return model.Response{Content: "done"}, nil
		}
	}
	return model.Response{ToolCalls: []events.ToolCall{{ID: "a1", Name: "act", Arguments: string(m)}}}, nil
}

// A request inside one branch of a Parallel suspends the whole run (the
// sibling branches are canceled); resumed after the decision, the run
// finishes and replays.
func TestApproval_InsideAParallelBranch(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	gated := gatedCounter(t, 1, flow.Always())
	count, err := flow.NewTool("count", "Count.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) {
		time.Sleep(20 * time.Millisecond) // still counting when the other branch suspends
		return fmt.Sprint("n=", a.N), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	free, err := flow.NewAgent("You count.", provider(t, echoModel{4}), flow.WithTools(count), flow.WithName("free"))
	if err != nil {
		t.Fatal(err)
	}
	wf := flow.NewParallel(flow.Named("gated", gated), free)
	in, _ := rt.NewUserSession(ctx, "count")
	run, err := rt.Start(ctx, "par", wf, in)
	id := waitingOn(t, err)[0]
	decide(t, rt, id, approval.Decision{Decision: events.DecisionApproved, By: "alice"})
	if _, err := replay.Resume(ctx, rt, run.ID, wf); err != nil {
		t.Fatal(err)
	}
	if st := runStatus(t, rt, run.ID); st != rath.RunOK {
		t.Fatalf("status %s", st)
	}
	mustReplay(t, rt, run.ID, wf)
}
