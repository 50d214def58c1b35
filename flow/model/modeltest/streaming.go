package modeltest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/textsplit"
)

// The suite's cases of streamed answers: how the chunks assemble, a nil
// callback, and a stream that agrees with the same call unstreamed.

func (s suite) streamAssembly(t *testing.T) {
	calls := []events.ToolCall{
		{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes/todo.md","limit":20}`},
		{ID: "call_2", Name: "list_files", Arguments: `{"dir":"notes"}`},
	}
	const content = "Let me look at both files."
	srv, c := s.setup(t, Reply{Content: content, ToolCalls: calls, Usage: events.Usage{PromptTokens: 30, CompletionTokens: 12}})
	var deltas []model.Delta
	got, err := streamer(t, c).Stream(t.Context(), userReq("hi"), func(d model.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: content, ToolCalls: calls, FinishReason: s.v.FinishToolCalls, Model: Model,
		Usage: events.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}

	// The deltas, all delivered before Stream returned, are the fragments
	// the server sent, in order: the content word by word, then each
	// call's id and name and its arguments in several pieces.
	var words []string
	frags := map[int][]string{}
	ids, names := map[int]string{}, map[int]string{}
	last := -1 // the call of the previous delta; -1 while content
	for _, d := range deltas {
		if d.Content != "" {
			if last != -1 {
				t.Fatalf("content delta %q after tool call deltas", d.Content)
			}
			if d.Arguments != "" || d.ToolCallID != "" || d.ToolName != "" {
				t.Fatalf("delta %+v mixes content and a tool call", d)
			}
			words = append(words, d.Content)
			continue
		}
		if d.ToolCallIndex < last {
			t.Fatalf("delta for call %d after call %d", d.ToolCallIndex, last)
		}
		last = d.ToolCallIndex
		if d.Arguments != "" {
			frags[d.ToolCallIndex] = append(frags[d.ToolCallIndex], d.Arguments)
		}
		if d.ToolCallID != "" {
			ids[d.ToolCallIndex] += d.ToolCallID
		}
		if d.ToolName != "" {
			names[d.ToolCallIndex] += d.ToolName
		}
	}
	if diff := cmp.Diff(textsplit.Words(content), words); diff != "" {
		t.Errorf("content deltas (-want +got):\n%s", diff)
	}
	for i, c := range calls {
		if ids[i] != c.ID || names[i] != c.Name {
			t.Errorf("call %d deltas: id %q name %q", i, ids[i], names[i])
		}
		if diff := cmp.Diff(textsplit.Fragments(c.Arguments, argFragment), frags[i]); diff != "" {
			t.Errorf("call %d argument deltas (-want +got):\n%s", i, diff)
		}
	}
	if len(frags) != len(calls) {
		t.Errorf("deltas for %d calls, want %d", len(frags), len(calls))
	}
	s.checkWire(t, srv, 0, WireStream)
}

func (s suite) streamNilCallback(t *testing.T) {
	_, c := s.setup(t, Reply{Content: "fine words", ToolCalls: []events.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}}})
	got, err := streamer(t, c).Stream(t.Context(), userReq("hi"), nil)
	if err != nil || got.Content != "fine words" || len(got.ToolCalls) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// streamAgrees checks that Stream gives what Complete gives for the same
// answer, whatever each wire format does with it.
func (s suite) streamAgrees(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
	}{
		{"text", Reply{Content: "Plain words, with punctuation.\nAnd a second line.", Usage: events.Usage{PromptTokens: 5, CompletionTokens: 9}}},
		{"tool calls only", Reply{ToolCalls: []events.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"x":[1,2,3]}`},
			{ID: "call_2", Name: "g", Arguments: `{"y":"ünïcödé"}`}}, Usage: events.Usage{PromptTokens: 7, CompletionTokens: 4}}},
		{"text and a tool call", Reply{Content: "Looking.", ToolCalls: []events.ToolCall{{ID: "call_1", Name: "f", Arguments: `{}`}}}},
		{"tool call without arguments", Reply{ToolCalls: []events.ToolCall{{ID: "call_1", Name: "now"}}}},
		{"reported model and finish reason", Reply{Content: "cut", Model: Model + "-2026", FinishReason: "max_tokens",
			Usage: events.Usage{PromptTokens: 1, CompletionTokens: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := s.setup(t, tt.reply, tt.reply)
			completed, err := c.Complete(t.Context(), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := streamer(t, c).Stream(t.Context(), userReq("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(completed, streamed); diff != "" {
				t.Fatalf("Complete and Stream differ (-complete +stream):\n%s", diff)
			}
			if completed.Content != tt.reply.Content || len(completed.ToolCalls) != len(tt.reply.ToolCalls) || completed.Usage.Calls != 1 {
				t.Fatalf("response %+v for reply %+v", completed, tt.reply)
			}
		})
	}
}
