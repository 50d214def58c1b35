package anthropic_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/modeltest"
)

func TestClient_StreamAssembly(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	calls := []events.ToolCall{
		{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"notes/todo.md","limit":20}`},
		{ID: "toolu_2", Name: "list_files", Arguments: `{"dir":"notes"}`},
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
	want := model.Response{Content: "Let me look at both files.", ToolCalls: calls, FinishReason: "tool_use", Model: "claude-test",
		Usage: events.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}
	var content strings.Builder
	args := map[int]string{}
	frags := map[int]int{}
	ids, names := map[int]string{}, map[int]string{}
	last := -1
	for _, d := range deltas {
		if d.Content != "" {
			content.WriteString(d.Content)
			if last != -1 {
				t.Fatalf("content delta %q after tool call deltas", d.Content)
			}
			continue
		}
		if d.ToolCallIndex < last {
			t.Fatalf("delta for call %d after call %d", d.ToolCallIndex, last)
		}
		last = d.ToolCallIndex
		args[d.ToolCallIndex] += d.Arguments
		if d.Arguments != "" {
			frags[d.ToolCallIndex]++
		}
		if d.ToolCallID != "" {
			ids[d.ToolCallIndex] = d.ToolCallID
			names[d.ToolCallIndex] = d.ToolName
		}
	}
	if content.String() != want.Content {
		t.Errorf("content deltas = %q", content.String())
	}
	for i, c := range calls {
		if args[i] != c.Arguments || ids[i] != c.ID || names[i] != c.Name || frags[i] < 2 {
			t.Errorf("call %d deltas: id %q name %q args %q in %d fragments", i, ids[i], names[i], args[i], frags[i])
		}
	}
	if w := wire(t, srv, 0); w["stream"] != true {
		t.Errorf("stream = %v", w["stream"])
	}
}

func TestClient_StreamToolCallWithoutArguments(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{{ID: "toolu_1", Name: "now"}}})
	got, err := MustClient(t, srv).Stream(t.Context(), userReq("time?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]events.ToolCall{{ID: "toolu_1", Name: "now", Arguments: "{}"}}, got.ToolCalls); diff != "" {
		t.Fatalf("tool calls (-want +got):\n%s", diff)
	}
}
