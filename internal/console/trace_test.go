package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/session"
)

// retryingRun records a run whose first model call is refused once (rate
// limit) and retried, then calls the shout tool and answers.
func retryingRun(t testing.TB, rt *rath.Runtime) string {
	t.Helper()
	ctx := context.Background()
	shout, err := flow.NewTool("shout", "Upper-cases text.", func(ctx context.Context, s *session.Session, a shoutArgs) (string, error) {
		return strings.ToUpper(a.Text), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	u := events.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}
	p := flow.Scripted(
		scripted.Entry{Error: &scripted.Failure{Kind: model.KindRateLimit, Status: 429, RetryAfterMS: 1, Message: "slow down"}},
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "shout", Arguments: `{"text":"hi"}`}}, Usage: &u, Model: "m-1"},
		scripted.Entry{Content: "Done " + hostile, Usage: &u, Model: "m-1"},
	)
	a, err := flow.NewAgent("Use the tool.", p, flow.WithTools(shout))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewUserSession(ctx, "Shout "+hostile)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "retrier", a, s)
	if err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// The waterfall is the OpenTelemetry export's span tree: the run, its
// agent, and under it the model calls and the tool call in the order they
// started, a retried call one bar with its failed attempt marked; the
// inspector shows one call's request, response and failed attempts.
func TestTrace_WaterfallAndCallInspector(t *testing.T) {
	f := newFixture(t, "")
	run := retryingRun(t, f.rt)
	v := decode[console.TraceView](t, f.get(t, "/api/runs/"+run+"/trace", ""))
	var kinds []string
	for _, s := range v.Spans {
		kinds = append(kinds, strings.Repeat(" ", s.Depth)+s.Kind)
	}
	if got, want := strings.Join(kinds, ","), "workflow, agent,  chat,  tool,  chat"; got != want {
		t.Fatalf("spans = %q, want %q\n%+v", got, want, v.Spans)
	}
	for i := 1; i < len(v.Spans); i++ {
		s, parent := v.Spans[i], v.Spans[i-1]
		if s.Depth > parent.Depth && s.Parent != parent.ID {
			t.Errorf("span %d (%s) is not under %s", i, s.Name, parent.Name)
		}
		if s.StartMS < v.Spans[0].StartMS || s.EndMS > v.TotalMS {
			t.Errorf("span %s [%v, %v] outside the run [0, %v]", s.Name, s.StartMS, s.EndMS, v.TotalMS)
		}
	}
	if v.Spans[3].StartMS < v.Spans[2].EndMS || v.Spans[4].StartMS < v.Spans[3].StartMS {
		t.Errorf("children out of order: %+v", v.Spans[2:])
	}
	chat := v.Spans[2]
	if chat.Attempts != 2 || len(chat.Marks) != 1 || chat.Marks[0].Name != "rath.provider.attempt_failed" || chat.Attrs["model"] == "" {
		t.Fatalf("retried call = %+v", chat)
	}
	if len(v.Agents) != 1 || v.Agents[0].Calls != 2 || v.Agents[0].Usage.TotalTokens != 50 || len(v.Calls) != 3 {
		t.Fatalf("agents %+v calls %+v", v.Agents, v.Calls)
	}

	c := decode[console.CallView](t, f.get(t, "/api/runs/"+run+"/calls/"+itoa(v.Spans[4].EndSeq), ""))
	if c.Call == nil || c.Call.Request == nil || c.Call.Response == nil || !strings.HasPrefix(c.Call.Response.Content, "Done") || len(c.Attempts) != 0 {
		t.Fatalf("last call = %+v", c)
	}
	msgs := c.Call.Request.Messages
	if len(msgs) < 3 || msgs[len(msgs)-1].Role != events.RoleToolResult || msgs[len(msgs)-1].Content != "HI" {
		t.Fatalf("request messages = %+v", msgs)
	}
	c = decode[console.CallView](t, f.get(t, "/api/runs/"+run+"/calls/"+itoa(chat.EndSeq), ""))
	if len(c.Attempts) != 1 || c.Attempts[0].ErrorKind == "" || !strings.Contains(c.Attempts[0].Error, "slow down") || c.Call.Attempt != 2 {
		t.Fatalf("retried call's attempts = %+v, call %+v", c.Attempts, c.Call)
	}
	for _, bad := range []struct {
		path string
		code int
	}{{"/api/runs/" + run + "/calls/x", http.StatusBadRequest}, {"/api/runs/" + run + "/calls/1", http.StatusNotFound},
		{"/api/runs/run-nosuch/trace", http.StatusNotFound}} {
		if res, _ := f.do(t, "GET", bad.path, nil); res.StatusCode != bad.code {
			t.Errorf("%s: %s, want %d", bad.path, res.Status, bad.code)
		}
	}
}

// A run waiting for a person shows the wait as a bar under the tool call
// it holds, open until a decision.
func TestTrace_ApprovalWaitIsABar(t *testing.T) {
	f := newFixture(t, "")
	run := waitingRun(t, f)
	v := decode[console.TraceView](t, f.get(t, "/api/runs/"+run+"/trace", ""))
	var wait, tool *console.SpanView
	for i := range v.Spans {
		switch v.Spans[i].Kind {
		case console.SpanApproval:
			wait = &v.Spans[i]
		case console.SpanTool:
			tool = &v.Spans[i]
		}
	}
	if wait == nil || tool == nil || wait.Parent != tool.ID || !wait.Incomplete || wait.Attrs["status"] != "pending" || wait.Depth != tool.Depth+1 {
		t.Fatalf("wait %+v under tool %+v", wait, tool)
	}
}
