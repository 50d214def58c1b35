package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/flow/model/openai"
)

func TestClient_StreamAssembly(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	calls := []events.ToolCall{
		{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes/todo.md","limit":20}`},
		{ID: "call_2", Name: "list_files", Arguments: `{"dir":"notes"}`},
	}
	srv.Push(modeltest.Reply{Content: "Let me look at both files.", ToolCalls: calls,
		Usage: events.Usage{PromptTokens: 30, CompletionTokens: 12}})
	var deltas []model.Delta
	got, err := MustClient(t, srv).Stream(t.Context(), userReq("what is in notes?"), func(d model.Delta) {
		deltas = append(deltas, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: "Let me look at both files.", ToolCalls: calls, FinishReason: "tool_calls", Model: "gpt-test",
		Usage: events.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}

	// The deltas, all delivered before Stream returned, rebuild the same
	// answer in order: content word by word, each call's arguments in
	// several fragments.
	var content strings.Builder
	args := map[int]string{}
	frags := map[int]int{}
	ids, names := map[int]string{}, map[int]string{}
	for _, d := range deltas {
		content.WriteString(d.Content)
		if d.Content == "" {
			args[d.ToolCallIndex] += d.Arguments
			if d.Arguments != "" {
				frags[d.ToolCallIndex]++
			}
			if d.ToolCallID != "" {
				ids[d.ToolCallIndex] = d.ToolCallID
			}
			if d.ToolName != "" {
				names[d.ToolCallIndex] = d.ToolName
			}
		}
	}
	if content.String() != want.Content {
		t.Errorf("content deltas = %q", content.String())
	}
	if n := strings.Count(want.Content, " ") + 1; len(deltas) < n {
		t.Errorf("%d deltas, want word-sized content deltas", len(deltas))
	}
	for i, c := range calls {
		if args[i] != c.Arguments || ids[i] != c.ID || names[i] != c.Name {
			t.Errorf("call %d deltas: id %q name %q args %q", i, ids[i], names[i], args[i])
		}
		if frags[i] < 2 {
			t.Errorf("call %d arguments came in %d fragments, want several", i, frags[i])
		}
	}
	// Content deltas come first, then call 0's fragments, then call 1's.
	last := -1
	for _, d := range deltas {
		idx := -1
		if d.Content == "" {
			idx = d.ToolCallIndex
		}
		if idx < last {
			t.Fatalf("delta order: call %d after call %d", idx, last)
		}
		last = idx
	}

	w := wire(t, srv, 0)
	if w["stream"] != true {
		t.Errorf("stream = %v", w["stream"])
	}
	if diff := cmp.Diff(map[string]any{"include_usage": true}, w["stream_options"]); diff != "" {
		t.Errorf("stream_options (-want +got):\n%s", diff)
	}
}

func TestClient_StreamNilCallback(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Content: "fine"})
	got, err := MustClient(t, srv).Stream(t.Context(), userReq("hi"), nil)
	if err != nil || got.Content != "fine" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestClient_StreamWithoutUsageChunk(t *testing.T) {
	// A server that ignores include_usage still gives a complete answer.
	srv := modeltest.NewOpenAI(t)
	chunk := func(delta, finish string) string {
		b, _ := json.Marshal(map[string]any{"id": "1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": json.RawMessage(delta), "finish_reason": finish}}})
		return "data: " + string(b) + "\n\n"
	}
	srv.Push(modeltest.Reply{Raw: chunk(`{"content":"hi"}`, "") + chunk(`{}`, "stop") + "data: [DONE]"})
	got, err := MustClient(t, srv).Stream(t.Context(), userReq("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "hi" || got.FinishReason != "stop" || got.Usage != (events.Usage{Calls: 1}) {
		t.Fatalf("got %+v", got)
	}
}

func TestClient_StreamRequestAnsweredWithJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m"})
	_, err := c.Stream(t.Context(), userReq("hi"), nil)
	if model.KindOf(err) != model.KindMalformed || !strings.Contains(err.Error(), "application/json") {
		t.Fatalf("err = %v, want malformed naming the content type", err)
	}
}
