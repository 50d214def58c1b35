package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// reviewTeam is a user-defined workflow whose children are named after
// its fields.
type reviewTeam struct {
	Critic *flow.Agent
	Writer *flow.Agent
}

func (r *reviewTeam) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	s, err := r.Writer.Forward(ctx, s)
	if err != nil {
		return s, err
	}
	return r.Critic.Forward(ctx, s)
}

type pipeline struct{ Review *reviewTeam }

func (p *pipeline) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return flow.Forward(ctx, p.Review, s)
}

func TestWorkflow_ModulePathsFromFieldNames(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){say("draft"), say("looks good")}}
	p := provider(t, f, nil)
	writer, _ := flow.NewAgent("write", p)
	critic, _ := flow.NewAgent("criticize", p)
	root := &pipeline{Review: &reviewTeam{Critic: critic, Writer: writer}}
	s, _ := rt.NewUserSession(ctx, "write a poem")
	out, err := flow.Forward(ctx, root, s)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := out.Chunk(1).Author, out.Chunk(2).Author; a != "root.review.writer" || b != "root.review.critic" {
		t.Fatalf("authors = %q, %q", a, b)
	}
	evs, _ := rt.Store().Read(ctx, eventlog.Query{Stream: out.ID(), Types: []string{"workflow.entered"}})
	var paths []string
	for _, ev := range evs {
		p, _ := ev.Decode()
		paths = append(paths, p.(*events.WorkflowEntered).Path)
	}
	if want := "[root root.review root.review.writer root.review.critic]"; fmt.Sprint(paths) != want {
		t.Fatalf("paths = %v, want %s", paths, want)
	}
}

func TestParallel_ForksRunsAndMerges(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){say("x"), say("y")}}
	p := provider(t, f, nil)
	a, _ := flow.NewAgent("", p, flow.WithName("a"))
	b, _ := flow.NewAgent("", p, flow.WithName("b"))
	s, _ := rt.NewUserSession(ctx, "fan out")
	out, err := flow.NewParallel(a, b).Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() != 3 || out.Lineage().Kind != session.KindMerge || len(out.Parents()) != 2 {
		t.Fatalf("merged = %d chunks, lineage %+v", out.Len(), out.Lineage())
	}
	authors := map[string]bool{out.Chunk(1).Author: true, out.Chunk(2).Author: true}
	if !authors["root.a"] || !authors["root.b"] {
		t.Fatalf("authors = %v", authors)
	}
	for _, parent := range out.Parents() {
		ps, _ := rt.Session(ctx, parent)
		if ps.Lineage().Kind != session.KindFork || ps.Lineage().Parents[0] != s.ID() {
			t.Fatalf("branch %s lineage %+v, want a fork of %s", parent, ps.Lineage(), s.ID())
		}
	}
	if u := out.Usage(); u.Calls != 2 {
		t.Fatalf("merged usage = %+v", u)
	}
}

// TestParallel_CountsSharedCallsOnce: the branches fork a session that
// already holds a call; the merge counts that call once, not once per
// branch.
func TestParallel_CountsSharedCallsOnce(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){say("plan"), say("x"), say("y"), say("z")}}
	p := provider(t, f, nil)
	planner, _ := flow.NewAgent("", p, flow.WithName("planner"))
	a, _ := flow.NewAgent("", p, flow.WithName("a"))
	b, _ := flow.NewAgent("", p, flow.WithName("b"))
	c, _ := flow.NewAgent("", p, flow.WithName("c"))
	s, _ := rt.NewUserSession(ctx, "plan, then fan out")
	planned, err := planner.Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := flow.NewParallel(a, b, c).Forward(ctx, planned)
	if err != nil {
		t.Fatal(err)
	}
	// Four calls of 12 tokens each were made: the plan and one per branch.
	if u := out.Usage(); u.Calls != 4 || u.TotalTokens != 48 {
		t.Fatalf("merged usage = %+v, want 48 tokens in 4 calls", u)
	}
	var spent events.Usage
	evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeProviderCalled}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		p, _ := ev.Decode()
		spent = spent.Add(p.(*events.ProviderCalled).Usage)
	}
	if spent.TotalTokens != out.Usage().TotalTokens || len(evs) != 4 {
		t.Fatalf("the log holds %d calls of %d tokens; the merge reports %+v", len(evs), spent.TotalTokens, out.Usage())
	}
}

func TestParallel_FailingBranchCancelsOthers(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	canceled := make(chan bool, 1)
	waiter := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		select {
		case <-ctx.Done():
			canceled <- true
			return s, ctx.Err()
		case <-time.After(5 * time.Second):
			canceled <- false
			return s, nil
		}
	})
	failer := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		return s, errors.New("reviewer crashed")
	})
	s, _ := rt.NewUserSession(ctx, "x")
	_, err := flow.NewParallel(flow.Named("slow", waiter), flow.Named("bad", failer)).Forward(ctx, s)
	var be *flow.BranchError
	if !errors.As(err, &be) || be.Name != "bad" || be.Index != 1 || !strings.Contains(err.Error(), "reviewer crashed") {
		t.Fatalf("err = %v, want branch 1 (bad)", err)
	}
	// Parallel returns after every branch has; the slow one either saw the
	// cancel or was canceled before it started.
	select {
	case c := <-canceled:
		if !c {
			t.Fatal("the other branch was not canceled")
		}
	default:
	}
}

func chooser(name string) func(model.Request) (model.Response, error) {
	return callTools(tc("sel", "choose_next", fmt.Sprintf(`{"name":%q}`, name)))
}

func TestSelector_LoopUntilNone(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){
		chooser("draft"), say("a draft"),
		chooser("nonsense"), chooser("review"), say("approved"),
		chooser("none"),
	}}
	p := provider(t, f, nil)
	draft, _ := flow.NewAgent("draft", p)
	review, _ := flow.NewAgent("review", p)
	sel := flow.NewSelector(p)
	cands := []flow.Candidate{{Name: "draft", Description: "write", Workflow: draft}, {Name: "review", Description: "check", Workflow: review}}
	s, _ := rt.NewUserSession(ctx, "make a thing")
	var ran []string
	for {
		next, err := sel.Select(ctx, s, cands...)
		if err != nil {
			t.Fatal(err)
		}
		if next == flow.Empty {
			break
		}
		ran = append(ran, next.(flow.Namer).Name())
		if s, err = flow.Forward(ctx, next, s); err != nil {
			t.Fatalf("forward after select (stale handle?): %v", err)
		}
	}
	if fmt.Sprint(ran) != "[draft review]" {
		t.Fatalf("ran = %v", ran)
	}
	evs, _ := rt.Store().Read(ctx, eventlog.Query{Stream: events.DecisionStream(s.ID()), Types: []string{"selector.decided"}})
	var decided []string
	for _, ev := range evs {
		p, _ := ev.Decode()
		d := p.(*events.SelectorDecided)
		decided = append(decided, fmt.Sprintf("%s/%d", d.Chosen, d.Attempts))
	}
	if fmt.Sprint(decided) != "[draft/1 review/2 /1]" {
		t.Fatalf("decisions = %v", decided)
	}
}

func TestSelector_TwoInvalidPicksFail(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){chooser("x"), say("I refuse")}}
	sel := flow.NewSelector(provider(t, f, nil))
	s, _ := rt.NewUserSession(ctx, "q")
	_, err := sel.Select(ctx, s, flow.Candidate{Name: "a", Workflow: flow.Empty})
	if !errors.Is(err, flow.ErrNoSelection) {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.requests()); n != 2 {
		t.Fatalf("model asked %d times, want 2", n)
	}
	if !strings.Contains(f.requests()[1].Messages[len(f.requests()[1].Messages)-1].Content, "not a candidate") {
		t.Fatal("the retry did not say what was wrong")
	}
}

func TestCompressor(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	f := &fakeModel{steps: []func(model.Request) (model.Response, error){say("They said hi twice.")}}
	s, _ := rt.NewUserSession(ctx, "hi")
	s, _ = s.Append(ctx, events.Chunk{Role: "assistant", Content: "hello"}, events.Chunk{Role: "user", Content: "hi again"})
	out, err := flow.NewCompressor(provider(t, f, nil), 1).Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if out.ID() == s.ID() || out.Lineage().Kind != session.KindCompress || out.Parents()[0] != s.ID() {
		t.Fatalf("compressed lineage = %+v", out.Lineage())
	}
	cs := out.Chunks()
	if len(cs) != 2 || cs[0].Role != "summary" || cs[0].Content != "They said hi twice." || cs[1].Content != "hi again" {
		t.Fatalf("compressed chunks = %+v", cs)
	}
	if len(f.requests()[0].Tools) != 0 {
		t.Fatal("the compressor offered tools")
	}
	loaded, _ := rt.Session(ctx, out.ID())
	if loaded.Len() != 2 || loaded.Usage() != out.Usage() {
		t.Fatalf("loaded = %d chunks usage %+v vs %+v", loaded.Len(), loaded.Usage(), out.Usage())
	}
}

func TestNewTool_RejectsBadDefinitions(t *testing.T) {
	if _, err := flow.NewTool[addArgs]("", "x", nil); !errors.Is(err, flow.ErrTool) {
		t.Fatalf("err = %v", err)
	}
	if _, err := flow.NewTool("ch", "x", func(context.Context, *session.Session, struct{ C chan int }) (string, error) { return "", nil }); !errors.Is(err, flow.ErrTool) {
		t.Fatalf("channel field accepted: %v", err)
	}
	_, err := flow.NewAgent("", provider(t, &fakeModel{}, nil), flow.WithTools(adder(t), adder(t)))
	if !errors.Is(err, flow.ErrTool) {
		t.Fatalf("duplicate tool accepted: %v", err)
	}
	raw, _ := json.Marshal(map[string]any{"type": "object"})
	if _, err := flow.NewSchemaTool("raw", "x", raw, func(context.Context, *session.Session, json.RawMessage) (flow.ToolResult, error) {
		return flow.ToolResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}
