package dossier_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// payload is model text that must reach every output as text, never as
// markup; the URL must stay inside escaped model text.
const payload = `<script>alert(1)</script> see https://example.com/x`

// reasonPayload reaches the Markdown as an inline table cell (a selector
// reason), the path that entity-escapes rather than fences.
const reasonPayload = `done <script>alert(2)</script>`

func mustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// teamModel answers from the request alone (so parallel branches need no
// ordering), except for one rate-limit failure on the coder's first call,
// which makes a provider.failed event.
type teamModel struct {
	mu     sync.Mutex
	failed bool
}

func count(req model.Request, role string) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == role {
			n++
		}
	}
	return n
}

func usage(p, c int64) events.Usage {
	return events.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

func call(id, name, args string) events.ToolCall {
	return events.ToolCall{ID: id, Name: name, Arguments: args}
}

func (m *teamModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	results := count(req, events.RoleToolResult)
	switch {
	case req.ToolChoice != "": // the selector
		coderTurns := 0
		for _, msg := range req.Messages {
			if msg.Role == events.RoleAssistant && msg.Author == "root.coder" && msg.Content != "" {
				coderTurns++
			}
		}
		if coderTurns < 2 {
			return model.Response{ToolCalls: []events.ToolCall{call("sel", req.ToolChoice, `{"name":"coder","reason":"more to write"}`)}, Usage: usage(30, 5)}, nil
		}
		return model.Response{ToolCalls: []events.ToolCall{call("sel", req.ToolChoice, fmt.Sprintf(`{"name":"none","reason":%q}`, reasonPayload))}, Usage: usage(40, 5)}, nil
	case req.Agent == "root.coder":
		m.mu.Lock()
		first := !m.failed
		m.failed = true
		m.mu.Unlock()
		if first {
			return model.Response{}, &model.Error{Kind: model.KindRateLimit, Provider: "team", Err: errors.New("slow down")}
		}
		last := req.Messages[len(req.Messages)-1]
		switch {
		case results == 0:
			return model.Response{ToolCalls: []events.ToolCall{
				call("w1", builtin.WriteWorkspaceFile, `{"path":"hello.txt","content":"hello\nworld\n"}`),
				call("s1", "shout", `{"text":"hi <b>there</b>"}`),
			}, Usage: usage(50, 20)}, nil
		case results == 2 && last.Role == events.RoleToolResult:
			return model.Response{Content: "Wrote hello.txt. " + payload, Usage: usage(80, 12)}, nil
		case results == 2:
			return model.Response{ToolCalls: []events.ToolCall{
				call("w2", builtin.WriteWorkspaceFile, `{"path":"hello.txt","content":"hello\nthere\nworld\n"}`),
				call("n1", "nope", `{}`),
			}, Usage: usage(90, 20)}, nil
		default:
			return model.Response{Content: "Updated hello.txt.", Usage: usage(120, 6)}, nil
		}
	case strings.HasPrefix(req.Agent, "root.reviewers."):
		return model.Response{Content: "Review by " + req.Agent + ": looks fine.", Usage: usage(60, 8)}, nil
	case len(req.Tools) == 0: // the compressor
		return model.Response{Content: "Summary: hello.txt written, then updated.", Usage: usage(70, 9)}, nil
	}
	return model.Response{}, fmt.Errorf("unexpected request from %q", req.Agent)
}

// team is the recorded workflow: a selector loop over a coder (twice, so
// the input session loops), two reviewers in parallel (fork and merge),
// then a compressor.
type team struct {
	Coder     *flow.Agent
	Reviewers *flow.Parallel
	Squash    *flow.Compressor
	sel       *flow.Selector
}

func (t *team) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	for {
		next, err := t.sel.Select(ctx, s, flow.Candidate{Name: "coder", Description: "writes files", Workflow: t.Coder})
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

type shoutArgs struct {
	Text string `json:"text"`
}

func newTeam(tb testing.TB, rt *rath.Runtime) *team {
	tb.Helper()
	ctx := context.Background()
	p, err := flow.ResolveProvider(flow.Provider{Client: &teamModel{}, Model: "team-1", Retry: flow.RetryPolicy{InitialBackoff: time.Millisecond}},
		flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/nonexistent"})
	if err != nil {
		tb.Fatal(err)
	}
	tools, err := builtin.New(rt.Sandboxes(), builtin.WriteWorkspaceFile)
	if err != nil {
		tb.Fatal(err)
	}
	shout, err := flow.NewTool("shout", "Shout text back.", func(_ context.Context, _ *session.Session, a shoutArgs) (string, error) {
		return strings.ToUpper(a.Text) + " " + payload, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	coder, err := flow.NewAgent("You write files.", p, flow.WithTools(append(tools, shout)...))
	if err != nil {
		tb.Fatal(err)
	}
	mem, err := rt.Memory(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := mem.Remember(ctx, "agent/root.reviewers.b", "hello.txt must end with a newline", nil); err != nil {
		tb.Fatal(err)
	}
	a, _ := flow.NewAgent("Review A.", p, flow.WithName("a"))
	b, err := flow.NewAgent("Review B.", p, flow.WithName("b"), flow.WithMemory(mem, flow.MemoryOptions{Commit: true}))
	if err != nil {
		tb.Fatal(err)
	}
	return &team{Coder: coder, Reviewers: flow.NewParallel(a, b), Squash: flow.NewCompressor(p, 1), sel: flow.NewSelector(p)}
}

// recordRun records the team's run on a session placed on a local
// workspace and returns its id.
func recordRun(tb testing.TB, rt *rath.Runtime) string {
	tb.Helper()
	ctx := context.Background()
	wf := newTeam(tb, rt)
	s, err := rt.NewUserSession(ctx, "Write hello.txt, then improve it.")
	if err != nil {
		tb.Fatal(err)
	}
	if s, err = s.To(ctx, "local", filepath.Clean(rt.Dir())+"-work"); err != nil {
		tb.Fatal(err)
	}
	run, err := rt.Start(ctx, "team", wf, s, rath.WithSeed("dossier-seed"), rath.WithRunID("run-dossier"), rath.WithCodeVersion("test"))
	if err != nil {
		tb.Fatal(err)
	}
	return run.ID
}

// fixture is one recorded run and its dossier, shared by the tests that
// only read it.
type fixture struct {
	rt  *rath.Runtime
	run string
	d   *dossier.Dossier
}

func mustFixture(tb testing.TB) fixture {
	tb.Helper()
	rt := mustOpen(tb)
	run := recordRun(tb, rt)
	d, err := dossier.Build(context.Background(), rt, run, dossier.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return fixture{rt: rt, run: run, d: d}
}

func render(tb testing.TB, d *dossier.Dossier, format string) string {
	tb.Helper()
	var sb strings.Builder
	if err := d.Render(&sb, format); err != nil {
		tb.Fatal(err)
	}
	return sb.String()
}
