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

// The behaviour every model client shares is tested by modeltest's
// Conformance suite (conformance_test.go); what is here is particular to
// chat completions and to the servers that imitate it.

func MustClient(tb testing.TB, srv *modeltest.Server) *openai.Client {
	tb.Helper()
	return openai.New(openai.Config{BaseURL: srv.URL(), APIKey: modeltest.Key, Model: "gpt-test"})
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

func ptr[T any](v T) *T { return &v }

func TestClient_ToolOnlyAssistantMessage(t *testing.T) {
	// An assistant turn without text is sent without content, as the API
	// itself answers a tool-only turn.
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Content: "ok"})
	msgs := []model.Message{
		{Role: events.RoleUser, Content: "Count cats."},
		{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{{ID: "call_a", Name: "search", Arguments: `{"q":"cats"}`}}},
		{Role: events.RoleToolResult, ToolCallID: "call_a", Name: "search", Content: "3 cats"},
	}
	if _, err := MustClient(t, srv).Complete(t.Context(), model.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	want := asJSON(t, `[
		{"role":"user","content":"Count cats."},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"search","arguments":"{\"q\":\"cats\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","name":"search","content":"3 cats"}]`)
	if diff := cmp.Diff(want, wire(t, srv, 0)["messages"]); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
}

func TestClient_ReasoningModels(t *testing.T) {
	// Reasoning models (o1, o3, ...) take max_completion_tokens and refuse
	// sampling fields; go-openai's validator knows which they are.
	t.Run("max tokens move to max_completion_tokens", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
		srv.Push(modeltest.Reply{Content: "ok"})
		req := userReq("hi")
		req.Model, req.Sampling = "o3-mini", model.Sampling{MaxTokens: 100}
		if _, err := MustClient(t, srv).Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		w := wire(t, srv, 0)
		if _, ok := w["max_tokens"]; ok || w["max_completion_tokens"] != 100.0 {
			t.Errorf("max_tokens %v, max_completion_tokens %v", w["max_tokens"], w["max_completion_tokens"])
		}
	})
	t.Run("temperature fails before sending", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
		req := userReq("x")
		req.Model, req.Sampling = "o3-mini", model.Sampling{Temperature: ptr(0.5)}
		_, err := MustClient(t, srv).Complete(t.Context(), req)
		if got := model.KindOf(err); got != model.KindBadRequest {
			t.Fatalf("kind = %q (%v), want bad_request", got, err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("%d requests sent, want 0", n)
		}
	})
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

func TestClient_ToolCallArgumentsAsSent(t *testing.T) {
	// Unlike the messages API, which always sends an input object,
	// chat completions carries arguments as a string; an empty one is
	// passed on as it came, in Complete and Stream alike (the tool runner
	// reads "" as {}).
	srv := modeltest.NewOpenAI(t)
	reply := modeltest.Reply{ToolCalls: []events.ToolCall{{ID: "call_1", Name: "now"}}}
	srv.Push(reply, reply)
	c := MustClient(t, srv)
	completed, err := c.Complete(t.Context(), userReq("time?"))
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := c.Stream(t.Context(), userReq("time?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []events.ToolCall{{ID: "call_1", Name: "now", Arguments: ""}}
	for _, got := range [][]events.ToolCall{completed.ToolCalls, streamed.ToolCalls} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("tool calls (-want +got):\n%s", diff)
		}
	}
}
