package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
)

func TestClient_CassetteSequence(t *testing.T) {
	c, err := scripted.Load("testdata/review.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	req := user("Please review this design.")
	req.Agent = "root.critic"
	first, err := c.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: "Let me check prior art.", FinishReason: "tool_calls", Model: "demo",
		ToolCalls: []events.ToolCall{{ID: "call_search", Name: "search", Arguments: `{"q":"prior art"}`}},
		Usage:     events.Usage{PromptTokens: 120, CompletionTokens: 9, TotalTokens: 129, Calls: 1}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("first (-want +got):\n%s", diff)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: events.RoleAssistant, ToolCalls: first.ToolCalls},
		model.Message{Role: events.RoleToolResult, ToolCallID: "call_search", Content: "no prior art found"})
	_, err = c.Complete(ctx, req)
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.KindRateLimit || me.StatusCode != 429 || me.RetryAfter.Milliseconds() != 5 ||
		me.Provider != "scripted" || !strings.Contains(me.Error(), "slow down") {
		t.Fatalf("second call: %v", err)
	}
	third, err := c.Complete(ctx, req)
	if err != nil || third.Content != "Approved." {
		t.Fatalf("third: %+v, %v", third, err)
	}
	if c.Remaining() != 0 {
		t.Fatalf("Remaining() = %d", c.Remaining())
	}
}

func TestClient_ExpectMismatchNamesEntryAndKeepsIt(t *testing.T) {
	c := scripted.New(scripted.Entry{Content: "a"}, scripted.Entry{Expect: "weather", Content: "sunny"})
	ctx := t.Context()
	if _, err := c.Complete(ctx, user("hi")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Complete(ctx, user("tell me a joke"))
	if model.KindOf(err) != model.KindScript {
		t.Fatalf("err = %v, want script", err)
	}
	for _, w := range []string{"responses[1]", `"weather"`, `"tell me a joke"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %q, want it to contain %s", err, w)
		}
	}
	if c.Remaining() != 1 {
		t.Fatalf("Remaining() = %d, want the mismatched entry kept", c.Remaining())
	}
	resp, err := c.Complete(ctx, user("what is the weather?"))
	if err != nil || resp.Content != "sunny" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

func TestClient_ExpectLooksAtLastInputOnly(t *testing.T) {
	tests := []struct {
		name string
		msgs []model.Message
		ok   bool
	}{
		{"last user", []model.Message{{Role: events.RoleUser, Content: "find cats"}}, true},
		{"last tool result", []model.Message{{Role: events.RoleUser, Content: "x"}, {Role: events.RoleAssistant, Content: "y"},
			{Role: events.RoleToolResult, ToolCallID: "c", Content: "3 cats"}}, true},
		{"assistant after user", []model.Message{{Role: events.RoleUser, Content: "cats"}, {Role: events.RoleAssistant, Content: "ok"}}, true},
		{"only an earlier user", []model.Message{{Role: events.RoleUser, Content: "cats"}, {Role: events.RoleUser, Content: "dogs"}}, false},
		{"only system", []model.Message{{Role: events.RoleSystem, Content: "cats"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := scripted.New(scripted.Entry{Expect: "cats", Content: "ok"})
			_, err := c.Complete(t.Context(), model.Request{Messages: tt.msgs})
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestClient_Exhausted(t *testing.T) {
	c := scripted.New(scripted.Entry{Agent: "root.a", Content: "for a"})
	req := user("hello")
	req.Agent = "root.b"
	_, err := c.Complete(t.Context(), req)
	if model.KindOf(err) != model.KindScript || !strings.Contains(err.Error(), `exhausted: no unused response for agent "root.b" (0 of 1 used)`) {
		t.Fatalf("err = %v", err)
	}
	req.Agent = "root.a"
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), req)
	if model.KindOf(err) != model.KindScript || !strings.Contains(err.Error(), "(1 of 1 used)") {
		t.Fatalf("err = %v", err)
	}
}

func TestClient_InvalidEntries(t *testing.T) {
	c := scripted.New(scripted.Entry{Content: "ok"}, scripted.Entry{Agent: "[", Content: "bad"})
	_, err := c.Complete(t.Context(), user("hi"))
	if model.KindOf(err) != model.KindScript || !strings.Contains(err.Error(), "entry 1") {
		t.Fatalf("err = %v, want a script error naming entry 1", err)
	}
}

func TestClient_Usage(t *testing.T) {
	req := model.Request{
		Messages: []model.Message{{Role: events.RoleSystem, Content: "12345678"}, {Role: events.RoleUser, Content: "héllo"}},
		Tools:    []model.ToolSpec{{Name: "ab", Parameters: []byte(`{}`)}},
	}
	tests := []struct {
		name  string
		entry scripted.Entry
		want  events.Usage
	}{
		// prompt: 8 + 5 runes + 2 + 2 = 17 chars -> 5 tokens.
		{"estimated", scripted.Entry{Content: "four"}, events.Usage{PromptTokens: 5, CompletionTokens: 1, TotalTokens: 6, Calls: 1}},
		{"estimated with tool call", scripted.Entry{ToolCalls: []scripted.ToolCall{{Name: "ab", Arguments: `{"k":1}`}}},
			events.Usage{PromptTokens: 5, CompletionTokens: 3, TotalTokens: 8, Calls: 1}},
		{"given", scripted.Entry{Content: "x", Usage: &events.Usage{PromptTokens: 100, CompletionTokens: 7}},
			events.Usage{PromptTokens: 100, CompletionTokens: 7, TotalTokens: 107, Calls: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := scripted.New(tt.entry).Complete(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Usage); diff != "" {
				t.Fatalf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClient_StreamMatchesComplete(t *testing.T) {
	entry := scripted.Entry{Content: "Two calls,  then done.\nBye.", ToolCalls: []scripted.ToolCall{
		{Name: "read", Arguments: `{"path":"a/very/long/path/name.txt"}`}, {Name: "list", Arguments: `{"dir":"."}`}}}
	want, err := scripted.New(entry).Complete(t.Context(), user("go"))
	if err != nil {
		t.Fatal(err)
	}
	var content strings.Builder
	args := map[int]string{}
	var got model.Response
	got, err = scripted.New(entry).Stream(t.Context(), user("go"), func(d model.Delta) {
		content.WriteString(d.Content)
		args[d.ToolCallIndex] += d.Arguments
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Stream and Complete differ (-complete +stream):\n%s", diff)
	}
	if content.String() != want.Content || args[0] != want.ToolCalls[0].Arguments || args[1] != want.ToolCalls[1].Arguments {
		t.Fatalf("deltas: content %q args %v", content.String(), args)
	}
}

func TestClient_Canceled(t *testing.T) {
	c := scripted.New(scripted.Entry{Content: "one two three"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Complete(ctx, user("hi")); model.KindOf(err) != model.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if c.Remaining() != 1 {
		t.Fatal("a canceled call consumed an entry")
	}
	ctx, cancel = context.WithCancel(t.Context())
	n := 0
	_, err := c.Stream(ctx, user("hi"), func(model.Delta) { n++; cancel() })
	if model.KindOf(err) != model.KindCanceled || n != 1 {
		t.Fatalf("err = %v after %d deltas, want canceled after 1", err, n)
	}
}

// TestClient_Concurrent runs two agents' calls interleaved from many
// goroutines: each agent gets exactly its own entries, each entry once.
func TestClient_Concurrent(t *testing.T) {
	const perAgent = 50
	var entries []scripted.Entry
	for i := range perAgent {
		entries = append(entries,
			scripted.Entry{Agent: "root.left", Content: fmt.Sprintf("left %d", i)},
			scripted.Entry{Agent: "root.right.*", Content: fmt.Sprintf("right %d", i)})
	}
	c := scripted.New(entries...)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]int{}
	)
	for i := range 2 * perAgent {
		agent := "root.left"
		if i%2 == 1 {
			agent = "root.right.worker"
		}
		wg.Go(func() {
			req := user("go")
			req.Agent = agent
			resp, err := c.Complete(t.Context(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if strings.HasPrefix(agent, "root.left") != strings.HasPrefix(resp.Content, "left") {
				t.Errorf("agent %s got %q", agent, resp.Content)
			}
			mu.Lock()
			seen[resp.Content]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != 2*perAgent || c.Remaining() != 0 {
		t.Fatalf("%d distinct answers, %d remaining", len(seen), c.Remaining())
	}
	for content, n := range seen {
		if n != 1 {
			t.Fatalf("%q answered %d times", content, n)
		}
	}
}

// A resumed run's recorded calls use up their entries in a client that
// has not answered them (a new process), and change nothing in one that
// has (the process that recorded them).
func TestClient_ReplayedKeepsThePlace(t *testing.T) {
	ctx := t.Context()
	entries := []scripted.Entry{{Content: "one"}, {Content: "two"}, {Content: "three"}}
	req := model.Request{Agent: "root"}

	fresh := scripted.New(entries...)
	first, err := scripted.New(entries...).Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Replayed(req, first)
	if got, err := fresh.Complete(ctx, req); err != nil || got.Content != "two" {
		t.Fatalf("after one replayed call a fresh client answers %q, %v; want two", got.Content, err)
	}

	same := scripted.New(entries...)
	live, _ := same.Complete(ctx, req)
	same.Replayed(req, live) // answered already: no entry is used again
	if got, err := same.Complete(ctx, req); err != nil || got.Content != "two" {
		t.Fatalf("the recording client answers %q, %v; want two", got.Content, err)
	}
	if same.Remaining() != 1 {
		t.Fatalf("%d entries left, want 1", same.Remaining())
	}
}
