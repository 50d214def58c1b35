package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/flow/model/openai"
)

const testKey = "sk-rath-test-KEY-0123456789abcdef"

func MustClient(tb testing.TB, srv *modeltest.Server) *openai.Client {
	tb.Helper()
	return openai.New(openai.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "gpt-test"})
}

func userReq(text string) model.Request {
	return model.Request{Messages: []model.Message{{Role: events.RoleUser, Content: text}}}
}

// wire decodes the n-th request body as generic JSON.
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

// asJSON decodes a literal for comparison with wire JSON.
func asJSON(tb testing.TB, s string) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func TestClient_CompleteText(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Content: "Hello there.", Model: "gpt-test-2026",
		Usage: events.Usage{PromptTokens: 12, CompletionTokens: 3}})
	got, err := MustClient(t, srv).Complete(t.Context(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: "Hello there.", FinishReason: "stop", Model: "gpt-test-2026",
		Usage: events.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if got, want := reqs[0].Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	w := wire(t, srv, 0)
	if w["model"] != "gpt-test" || w["stream"] != false {
		t.Errorf("model, stream = %v, %v", w["model"], w["stream"])
	}
	if diff := cmp.Diff(asJSON(t, `[{"role":"user","content":"hi"}]`), w["messages"]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	for _, absent := range []string{"tools", "tool_choice", "temperature", "stream_options"} {
		if _, ok := w[absent]; ok {
			t.Errorf("%s sent, want absent", absent)
		}
	}
}

func TestClient_RequestModelOverridesConfig(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Content: "ok"})
	req := userReq("hi")
	req.Model = "other-model"
	if _, err := MustClient(t, srv).Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := wire(t, srv, 0)["model"]; got != "other-model" {
		t.Fatalf("model = %v, want other-model", got)
	}
}

func TestClient_ParallelToolCallsAndRoundTrip(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	calls := []events.ToolCall{
		{ID: "call_a", Name: "search", Arguments: `{"q":"cats"}`},
		{ID: "call_b", Name: "search", Arguments: `{"q":"dogs"}`},
	}
	srv.Push(modeltest.Reply{ToolCalls: calls, Usage: events.Usage{PromptTokens: 40, CompletionTokens: 20}},
		modeltest.Reply{Content: "3 cats, 4 dogs."})
	c := MustClient(t, srv)
	search := model.ToolSpec{Name: "search", Description: "Search the zoo.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}
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
	if diff := cmp.Diff(calls, first.ToolCalls); diff != "" {
		t.Fatalf("tool calls (-want +got):\n%s", diff)
	}
	if first.FinishReason != "tool_calls" || first.Content != "" || first.Usage.TotalTokens != 60 {
		t.Fatalf("finish %q content %q usage %+v", first.FinishReason, first.Content, first.Usage)
	}

	msgs = append(msgs,
		model.Message{Role: events.RoleAssistant, Content: first.Content, ToolCalls: first.ToolCalls},
		model.Message{Role: events.RoleToolResult, ToolCallID: "call_a", Name: "search", Content: "3 cats"},
		model.Message{Role: events.RoleToolResult, ToolCallID: "call_b", Name: "search", Content: "4 dogs"},
	)
	second, err := c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.ToolSpec{search}})
	if err != nil {
		t.Fatal(err)
	}
	if second.Content != "3 cats, 4 dogs." {
		t.Fatalf("content = %q", second.Content)
	}
	w := wire(t, srv, 1)
	wantMsgs := asJSON(t, `[
		{"role":"system","content":"You are terse."},
		{"role":"system","content":"Relevant memory:\nThe user likes cats."},
		{"role":"system","content":"Summary of the earlier conversation:\nWe discussed the weather."},
		{"role":"user","content":"Count cats and dogs."},
		{"role":"assistant","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"search","arguments":"{\"q\":\"cats\"}"}},
			{"id":"call_b","type":"function","function":{"name":"search","arguments":"{\"q\":\"dogs\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","name":"search","content":"3 cats"},
		{"role":"tool","tool_call_id":"call_b","name":"search","content":"4 dogs"}]`)
	if diff := cmp.Diff(wantMsgs, w["messages"]); diff != "" {
		t.Errorf("second request messages (-want +got):\n%s", diff)
	}
	wantTools := asJSON(t, `[{"type":"function","function":{"name":"search","description":"Search the zoo.",
		"parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}]`)
	if diff := cmp.Diff(wantTools, w["tools"]); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestClient_ToolChoice(t *testing.T) {
	tool := model.ToolSpec{Name: "lookup"} // no parameters: an empty object schema is sent
	tests := []struct {
		name   string
		tools  []model.ToolSpec
		choice string
		want   any // nil: tool_choice absent
	}{
		{"auto", []model.ToolSpec{tool}, model.ToolChoiceAuto, nil},
		{"required", []model.ToolSpec{tool}, model.ToolChoiceRequired, "required"},
		{"none", []model.ToolSpec{tool}, model.ToolChoiceNone, "none"},
		{"none without tools", nil, model.ToolChoiceNone, nil},
		{"forced", []model.ToolSpec{tool}, "lookup", map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{Content: "ok"})
			req := userReq("hi")
			req.Tools, req.ToolChoice = tt.tools, tt.choice
			if _, err := MustClient(t, srv).Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			w := wire(t, srv, 0)
			got, ok := w["tool_choice"]
			if tt.want == nil {
				if ok {
					t.Fatalf("tool_choice = %v, want absent", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("tool_choice (-want +got):\n%s", diff)
			}
			if len(tt.tools) > 0 {
				params := w["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["parameters"]
				if diff := cmp.Diff(asJSON(t, `{"type":"object","properties":{}}`), params); diff != "" {
					t.Fatalf("parameters (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestClient_InvalidRequestsFailBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		req  model.Request
	}{
		{"unknown forced tool", model.Request{Messages: userReq("x").Messages, Tools: []model.ToolSpec{{Name: "a"}}, ToolChoice: "b"}},
		{"required without tools", model.Request{Messages: userReq("x").Messages, ToolChoice: model.ToolChoiceRequired}},
		{"bad schema", model.Request{Messages: userReq("x").Messages, Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{`)}}}},
		{"unknown role", model.Request{Messages: []model.Message{{Role: "wizard", Content: "x"}}}},
		{"tool result without id", model.Request{Messages: []model.Message{{Role: events.RoleToolResult, Content: "x"}}}},
		{"reasoning model with temperature", model.Request{Model: "o3-mini", Messages: userReq("x").Messages,
			Sampling: model.Sampling{Temperature: ptr(0.5)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewOpenAI(t)
			_, err := MustClient(t, srv).Complete(t.Context(), tt.req)
			if got := model.KindOf(err); got != model.KindBadRequest {
				t.Fatalf("kind = %q (%v), want bad_request", got, err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests sent, want 0", n)
			}
		})
	}
	t.Run("no model", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
		c := openai.New(openai.Config{BaseURL: srv.URL()})
		if _, err := c.Complete(t.Context(), userReq("x")); model.KindOf(err) != model.KindBadRequest {
			t.Fatalf("err = %v, want bad_request", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestClient_Sampling(t *testing.T) {
	tests := []struct {
		name     string
		model    string
		sampling model.Sampling
		check    func(t *testing.T, w map[string]any)
	}{
		{"all fields", "gpt-test", model.Sampling{Temperature: ptr(0.25), TopP: ptr(0.5), MaxTokens: 64, Seed: ptr(7), Stop: []string{"END"}},
			func(t *testing.T, w map[string]any) {
				want := map[string]any{"temperature": 0.25, "top_p": 0.5, "max_tokens": 64.0, "seed": 7.0, "stop": []any{"END"}}
				for k, v := range want {
					if diff := cmp.Diff(v, w[k]); diff != "" {
						t.Errorf("%s (-want +got):\n%s", k, diff)
					}
				}
			}},
		{"explicit zero temperature is sent", "gpt-test", model.Sampling{Temperature: ptr(0.0)},
			func(t *testing.T, w map[string]any) {
				temp, ok := w["temperature"].(float64)
				if !ok || temp <= 0 || temp > 1e-30 {
					t.Errorf("temperature = %v, want present and effectively 0", w["temperature"])
				}
			}},
		{"reasoning model takes max_completion_tokens", "o3-mini", model.Sampling{MaxTokens: 100},
			func(t *testing.T, w map[string]any) {
				if _, ok := w["max_tokens"]; ok || w["max_completion_tokens"] != 100.0 {
					t.Errorf("max_tokens %v, max_completion_tokens %v", w["max_tokens"], w["max_completion_tokens"])
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{Content: "ok"})
			req := userReq("hi")
			req.Model, req.Sampling = tt.model, tt.sampling
			if _, err := MustClient(t, srv).Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			tt.check(t, wire(t, srv, 0))
		})
	}
}

func TestClient_ToolCallWithoutIDGetsPosition(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Raw: `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,
		"message":{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]},
		"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`})
	got, err := MustClient(t, srv).Complete(t.Context(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := []events.ToolCall{{ID: "call_0", Name: "f", Arguments: "{}"}}
	if diff := cmp.Diff(want, got.ToolCalls); diff != "" {
		t.Fatalf("tool calls (-want +got):\n%s", diff)
	}
}
