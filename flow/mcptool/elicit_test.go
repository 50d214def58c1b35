package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

// askServer has one tool that asks the user for a branch name (an
// elicitation, as an input request of the call) before it answers.
func askServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "git", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "push", Description: "Push, after asking which branch."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"branch": &mcp.ElicitParams{Message: "Which branch?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"branch":{"type":"string"}},"required":["branch"]}`)}}}, nil, nil
			}
			res, ok := req.Params.InputResponses["branch"].(*mcp.ElicitResult)
			if !ok {
				return nil, nil, fmt.Errorf("no answer")
			}
			text := "not pushed: " + res.Action
			if res.Action == "accept" {
				text = fmt.Sprint("pushed to ", res.Content["branch"])
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	return s
}

// A server's elicitation during a tool call goes through flow.Ask: the
// run suspends with the question recorded, a person answers, the resumed
// run calls the tool again and the server gets the answer; the replay
// answers from the record.
func TestElicitation_SuspendsAndResumes(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	m := MustManager(t, mcptool.Options{})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := askServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	if err := m.ConnectTransport(ctx, "git", ct); err != nil {
		t.Fatal(err)
	}
	tools := mustTools(t, m, "git")
	model := flow.Scripted(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "p1", Name: "git__push", Arguments: `{}`}}},
		scripted.Entry{Content: "done"},
	)
	agent, err := flow.NewAgent("", model, flow.WithTools(tools...))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := rt.NewUserSession(ctx, "push it")
	run, err := rt.Start(ctx, "pusher", agent, in)
	var waiting *flow.WaitingError
	if !errors.As(err, &waiting) {
		t.Fatalf("got %v, want the run waiting", err)
	}
	st1, err := approval.Load(ctx, rt.Store(), waiting.Requests[0])
	if err != nil || st1.Request.Kind != events.ApprovalQuestion || st1.Request.Question != "Which branch?" || st1.Request.CallID != "p1" {
		t.Fatalf("request %+v %v", st1.Request, err)
	}
	if _, err := approval.Decide(ctx, rt.Store(), st1.Request.ID, approval.Decision{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`{"branch":7}`)}, time.Now()); !errors.Is(err, approval.ErrInvalid) {
		t.Fatalf("an answer against the server's schema: %v", err)
	}
	if _, err := approval.Decide(ctx, rt.Store(), st1.Request.ID, approval.Decision{Decision: events.DecisionAnswered, By: "alice", Answer: json.RawMessage(`{"branch":"main"}`)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := replay.Resume(ctx, rt, run.ID, agent)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range res.Output.Chunks() {
		found = found || (c.Role == events.RoleToolResult && c.Content == "pushed to main")
	}
	if !found {
		t.Fatalf("the server did not get the answer: %+v", res.Output.Chunks())
	}
	rep, err := replay.Run(ctx, rt, run.ID, agent)
	if err != nil || !rep.OK() {
		t.Fatalf("replay: %v %v", rep, err)
	}
}

// Outside a run's tool call (Manager.Call) nobody can be asked: the
// server's question is declined.
func TestElicitation_DeclinedWithoutASession(t *testing.T) {
	m := MustManager(t, mcptool.Options{})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := askServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	if err := m.ConnectTransport(t.Context(), "git", ct); err != nil {
		t.Fatal(err)
	}
	res, err := m.Call(t.Context(), "git", "push", nil)
	if err != nil || res.Content != "not pushed: decline" {
		t.Fatalf("%q %v", res.Content, err)
	}
}
