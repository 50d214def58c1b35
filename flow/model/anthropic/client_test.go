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

// The behaviour every model client shares is tested by modeltest's
// Conformance suite (conformance_test.go); what is here is particular to
// the messages API and its SDK.

func MustClient(tb testing.TB, srv *modeltest.Server) *anthropic.Client {
	tb.Helper()
	return anthropic.New(anthropic.Config{BaseURL: srv.URL(), APIKey: modeltest.Key, Model: "claude-test"})
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

func TestClient_IgnoresEnvironment(t *testing.T) {
	// The SDK must not pick credentials or the URL up from the
	// environment: flow resolves them.
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "sk-token-from-env")
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "Hello there."})
	got, err := MustClient(t, srv).Complete(t.Context(), userReq("hi"))
	if err != nil || got.Content != "Hello there." {
		t.Fatalf("got %+v, %v", got, err)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != modeltest.Key || h.Get("Authorization") != "" {
		t.Errorf("x-api-key %q, authorization %q", h.Get("X-Api-Key"), h.Get("Authorization"))
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

func TestClient_SchemaMustBeAnObject(t *testing.T) {
	// input_schema is an object schema; the API would refuse anything else.
	tests := []struct {
		name   string
		schema string
	}{
		{"not an object", `[1]`},
		{"of another type", `{"type":"string"}`},
		{"required not names", `{"type":"object","required":[1]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewAnthropic(t)
			req := userReq("x")
			req.Tools = []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(tt.schema)}}
			_, err := MustClient(t, srv).Complete(t.Context(), req)
			if got := model.KindOf(err); got != model.KindBadRequest {
				t.Fatalf("kind = %q (%v), want bad_request", got, err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests sent, want 0", n)
			}
		})
	}
}

func TestClient_ConfiguredMaxTokens(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "ok"}, modeltest.Reply{Content: "ok"})
	c := anthropic.New(anthropic.Config{BaseURL: srv.URL(), APIKey: modeltest.Key, Model: "claude-test", MaxTokens: 1000})
	if _, err := c.Complete(t.Context(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	req := userReq("hi")
	req.Sampling.MaxTokens = 10
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if a, b := wire(t, srv, 0)["max_tokens"], wire(t, srv, 1)["max_tokens"]; a != 1000.0 || b != 10.0 {
		t.Fatalf("max_tokens %v then %v, want the configured 1000, then the request's 10", a, b)
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
