package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/anthropic"
	"github.com/gorath/rath/flow/model/modeltest"
)

const testKey = "sk-ant-rath-test-KEY-0123456789abcdef"

func MustClient(tb testing.TB, srv *modeltest.Server) *anthropic.Client {
	tb.Helper()
	return anthropic.New(anthropic.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "claude-test"})
}

func userReq(text string) model.Request {
	return model.Request{Messages: []model.Message{{Role: events.RoleUser, Content: text}}}
}

func wire(tb testing.TB, srv *modeltest.Server, n int) map[string]any {
	tb.Helper()
	reqs := srv.Requests()
	if len(reqs) <= n {
		tb.Fatalf("server got %d requests, want more than %d", len(reqs), n)
	}
	var m map[string]any
	if err := reqs[n].Decode(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func asJSON(tb testing.TB, s string) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

func TestClient_CompleteText(t *testing.T) {
	// The SDK must not pick credentials or the URL up from the
	// environment: flow resolves them.
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "Hello there.", Model: "claude-test-2026",
		Usage: events.Usage{PromptTokens: 12, CompletionTokens: 3}})
	got, err := MustClient(t, srv).Complete(t.Context(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: "Hello there.", FinishReason: "end_turn", Model: "claude-test-2026",
		Usage: events.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != testKey || h.Get("Anthropic-Version") == "" {
		t.Errorf("x-api-key %q, anthropic-version %q", h.Get("X-Api-Key"), h.Get("Anthropic-Version"))
	}
	w := wire(t, srv, 0)
	if w["model"] != "claude-test" || w["max_tokens"] != float64(anthropic.DefaultMaxTokens) {
		t.Errorf("model %v, max_tokens %v", w["model"], w["max_tokens"])
	}
	if diff := cmp.Diff(asJSON(t, `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`), w["messages"]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	for _, absent := range []string{"system", "tools", "tool_choice", "temperature", "stream"} {
		if _, ok := w[absent]; ok {
			t.Errorf("%s sent, want absent", absent)
		}
	}
}

func TestClient_ParallelToolCallsAndRoundTrip(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	calls := []events.ToolCall{
		{ID: "toolu_a", Name: "search", Arguments: `{"q":"cats"}`},
		{ID: "toolu_b", Name: "search", Arguments: `{"q":"dogs"}`},
	}
	srv.Push(modeltest.Reply{Content: "Checking both.", ToolCalls: calls,
		Usage: events.Usage{PromptTokens: 40, CompletionTokens: 20}},
		modeltest.Reply{Content: "3 cats; the dog count failed."})
	c := MustClient(t, srv)
	search := model.ToolSpec{Name: "search", Description: "Search the zoo.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)}
	msgs := []model.Message{
		{Role: events.RoleSystem, Content: "You are terse."},
		{Role: events.RoleMemory, Content: "The user likes cats."},
		{Role: events.RoleSummary, Content: "We discussed the weather."},
		{Role: events.RoleUser, Content: "Count cats and dogs."},
	}
	first, err := c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.ToolSpec{search}})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: "Checking both.", ToolCalls: calls, FinishReason: "tool_use", Model: "claude-test",
		Usage: events.Usage{PromptTokens: 40, CompletionTokens: 20, TotalTokens: 60, Calls: 1}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("first response (-want +got):\n%s", diff)
	}

	msgs = append(msgs,
		model.Message{Role: events.RoleAssistant, Content: first.Content, ToolCalls: first.ToolCalls},
		model.Message{Role: events.RoleToolResult, ToolCallID: "toolu_a", Name: "search", Content: "3 cats"},
		model.Message{Role: events.RoleToolResult, ToolCallID: "toolu_b", Name: "search", Content: "timeout",
			Meta: map[string]string{"error_kind": "timeout"}},
	)
	if _, err := c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.ToolSpec{search}}); err != nil {
		t.Fatal(err)
	}
	w := wire(t, srv, 1)
	wantSystem := asJSON(t, `[
		{"type":"text","text":"You are terse."},
		{"type":"text","text":"Relevant memory:\nThe user likes cats."},
		{"type":"text","text":"Summary of the earlier conversation:\nWe discussed the weather."}]`)
	if diff := cmp.Diff(wantSystem, w["system"]); diff != "" {
		t.Errorf("system (-want +got):\n%s", diff)
	}
	wantMsgs := asJSON(t, `[
		{"role":"user","content":[{"type":"text","text":"Count cats and dogs."}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Checking both."},
			{"type":"tool_use","id":"toolu_a","name":"search","input":{"q":"cats"}},
			{"type":"tool_use","id":"toolu_b","name":"search","input":{"q":"dogs"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":"3 cats"}]},
			{"type":"tool_result","tool_use_id":"toolu_b","is_error":true,"content":[{"type":"text","text":"timeout"}]}]}]`)
	if diff := cmp.Diff(wantMsgs, w["messages"]); diff != "" {
		t.Errorf("second request messages (-want +got):\n%s", diff)
	}
	wantTools := asJSON(t, `[{"name":"search","description":"Search the zoo.",
		"input_schema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}}]`)
	if diff := cmp.Diff(wantTools, w["tools"]); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestClient_MessageGrouping(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "ok"})
	msgs := []model.Message{
		{Role: events.RoleUser, Content: "first"},
		{Role: events.RoleUser, Content: "second"},
		{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{{ID: "t1", Name: "f", Arguments: "not json"}}},
		{Role: events.RoleToolResult, ToolCallID: "t1", Content: "", Meta: map[string]string{"is_error": "true"}},
		{Role: events.RoleUser, Content: "third"},
		{Role: events.RoleAssistant, Content: ""}, // empty: dropped
	}
	if _, err := MustClient(t, srv).Complete(t.Context(), model.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	want := asJSON(t, `[
		{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true},{"type":"text","text":"third"}]}]`)
	if diff := cmp.Diff(want, wire(t, srv, 0)["messages"]); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
}

func TestClient_ToolChoice(t *testing.T) {
	tool := model.ToolSpec{Name: "lookup"}
	tests := []struct {
		name   string
		tools  []model.ToolSpec
		choice string
		want   any
	}{
		{"auto", []model.ToolSpec{tool}, model.ToolChoiceAuto, nil},
		{"required", []model.ToolSpec{tool}, model.ToolChoiceRequired, map[string]any{"type": "any"}},
		{"none", []model.ToolSpec{tool}, model.ToolChoiceNone, map[string]any{"type": "none"}},
		{"none without tools", nil, model.ToolChoiceNone, nil},
		{"forced", []model.ToolSpec{tool}, "lookup", map[string]any{"type": "tool", "name": "lookup"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewAnthropic(t)
			srv.Push(modeltest.Reply{Content: "ok"})
			req := userReq("hi")
			req.Tools, req.ToolChoice = tt.tools, tt.choice
			if _, err := MustClient(t, srv).Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			got, ok := wire(t, srv, 0)["tool_choice"]
			if tt.want == nil {
				if ok {
					t.Fatalf("tool_choice = %v, want absent", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("tool_choice (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClient_InvalidRequestsFailBeforeSending(t *testing.T) {
	msgs := userReq("x").Messages
	tests := []struct {
		name string
		req  model.Request
	}{
		{"unknown forced tool", model.Request{Messages: msgs, Tools: []model.ToolSpec{{Name: "a"}}, ToolChoice: "b"}},
		{"required without tools", model.Request{Messages: msgs, ToolChoice: model.ToolChoiceRequired}},
		{"schema not an object", model.Request{Messages: msgs, Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`[1]`)}}}},
		{"schema of another type", model.Request{Messages: msgs, Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{"type":"string"}`)}}}},
		{"unknown role", model.Request{Messages: []model.Message{{Role: "wizard", Content: "x"}}}},
		{"tool result without id", model.Request{Messages: []model.Message{{Role: events.RoleToolResult, Content: "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewAnthropic(t)
			_, err := MustClient(t, srv).Complete(t.Context(), tt.req)
			if got := model.KindOf(err); got != model.KindBadRequest {
				t.Fatalf("kind = %q (%v), want bad_request", got, err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests sent, want 0", n)
			}
		})
	}
}

func TestClient_Sampling(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "ok"})
	req := userReq("hi")
	req.Sampling = model.Sampling{Temperature: ptr(0.0), TopP: ptr(0.9), MaxTokens: 256, Seed: ptr(3), Stop: []string{"END"}}
	if _, err := MustClient(t, srv).Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	w := wire(t, srv, 0)
	want := map[string]any{"temperature": 0.0, "top_p": 0.9, "max_tokens": 256.0, "stop_sequences": []any{"END"}}
	for k, v := range want {
		if diff := cmp.Diff(v, w[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	if _, ok := w["seed"]; ok {
		t.Error("seed sent; the API has none")
	}
}

func TestClient_HugeMaxTokensStreams(t *testing.T) {
	// The SDK refuses a non-streamed call that could run past 10 minutes;
	// Complete streams it instead.
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "long answer"})
	req := userReq("write a book")
	req.Sampling.MaxTokens = 64000
	got, err := MustClient(t, srv).Complete(t.Context(), req)
	if err != nil || got.Content != "long answer" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if !srv.Requests()[0].Stream() {
		t.Fatal("request was not streamed")
	}
}
