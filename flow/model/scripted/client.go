package scripted

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/textsplit"
)

// Provider is the Provider field of the errors this client returns.
const Provider = "scripted"

// argFragment is the size of the tool-argument fragments Stream emits.
const argFragment = 8

// Client answers from cassette entries. It implements model.Client and
// model.Streamer and is safe for concurrent use; each entry is used at
// most once.
type Client struct {
	name        string // the file, for error messages
	description string
	invalid     error // why New's entries cannot be used, if they cannot

	mu      sync.Mutex // protects entries and used
	entries []Entry
	used    []bool
}

var (
	_ model.Client   = (*Client)(nil)
	_ model.Streamer = (*Client)(nil)
)

// New returns a client answering with entries, in order. Entries are
// checked like a cassette file's; a bad one makes every call fail with a
// KindScript error naming it. Tool calls without an id get
// "call_<entry>_<call>".
func New(entries ...Entry) *Client {
	c := &Client{name: "(entries)", entries: make([]Entry, len(entries)), used: make([]bool, len(entries))}
	for i, e := range entries {
		if err := check(e); err != nil && c.invalid == nil {
			c.invalid = fmt.Errorf("entry %d: %w", i, err)
		}
		e.ToolCalls = append([]ToolCall(nil), e.ToolCalls...)
		for j := range e.ToolCalls {
			if e.ToolCalls[j].ID == "" {
				e.ToolCalls[j].ID = fmt.Sprintf("call_%d_%d", i, j)
			}
		}
		c.entries[i] = e
	}
	return c
}

// Description returns the cassette's description.
func (c *Client) Description() string { return c.description }

// Remaining returns how many entries are still unused.
func (c *Client) Remaining() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unusedLocked()
}

// Replayed uses up the entry that gave the recorded response, if this
// client has not used it yet: a run resumed in a new process, whose
// recorded calls the record answers, goes on with the entries after them
// instead of starting the cassette over; resumed in the process that
// recorded it, the entries are used already and nothing changes.
func (c *Client) Replayed(req model.Request, resp model.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if c.used[i] || e.Error != nil {
			continue
		}
		if ok, err := path.Match(e.Agent, req.Agent); e.Agent != "" && (err != nil || !ok) {
			continue
		}
		if sameAnswer(respond(e, req), resp) {
			c.used[i] = true
			return
		}
	}
}

// sameAnswer compares what the model said: text and tool calls.
func sameAnswer(a, b model.Response) bool {
	if a.Content != b.Content || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}

// Complete answers with the next matching entry.
func (c *Client) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	e, err := c.take(ctx, req)
	if err != nil {
		return model.Response{}, err
	}
	return respond(e, req), nil
}

// Stream answers like Complete, passing the content to onDelta word by
// word and each tool call as an id-and-name delta followed by argument
// fragments, all before it returns.
func (c *Client) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	e, err := c.take(ctx, req)
	if err != nil {
		return model.Response{}, err
	}
	resp := respond(e, req)
	if onDelta == nil {
		return resp, nil
	}
	var deltas []model.Delta
	for _, w := range textsplit.Words(resp.Content) {
		deltas = append(deltas, model.Delta{Content: w})
	}
	for i, tc := range resp.ToolCalls {
		deltas = append(deltas, model.Delta{ToolCallIndex: i, ToolCallID: tc.ID, ToolName: tc.Name})
		for _, f := range textsplit.Fragments(tc.Arguments, argFragment) {
			deltas = append(deltas, model.Delta{ToolCallIndex: i, Arguments: f})
		}
	}
	for _, d := range deltas {
		if err := ctx.Err(); err != nil {
			return model.Response{}, canceled(err)
		}
		onDelta(d)
	}
	return resp, nil
}

// take consumes the entry for req, or explains why there is none. An
// entry whose expectation fails is not consumed.
func (c *Client) take(ctx context.Context, req model.Request) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, canceled(err)
	}
	if c.invalid != nil {
		return Entry{}, c.scriptErr("%v", c.invalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if c.used[i] {
			continue
		}
		if e.Agent != "" {
			ok, err := path.Match(e.Agent, req.Agent)
			if err != nil {
				return Entry{}, c.scriptErr("responses[%d]: agent pattern %q: %v", i, e.Agent, err)
			}
			if !ok {
				continue
			}
		}
		if e.Expect != "" {
			if last, ok := lastInput(req.Messages); !ok || !strings.Contains(last, e.Expect) {
				return Entry{}, c.scriptErr("responses[%d] expects the last user or tool_result message to contain %q; agent %q sent %q",
					i, e.Expect, req.Agent, clip(last))
			}
		}
		c.used[i] = true
		if e.Error != nil {
			return Entry{}, e.Error.err()
		}
		return e, nil
	}
	last, _ := lastInput(req.Messages)
	return Entry{}, c.scriptErr("cassette exhausted: no unused response for agent %q (%d of %d used); last input %q",
		req.Agent, len(c.used)-c.unusedLocked(), len(c.used), clip(last))
}

func (c *Client) unusedLocked() int {
	n := 0
	for _, u := range c.used {
		if !u {
			n++
		}
	}
	return n
}

func (c *Client) scriptErr(format string, args ...any) error {
	return &model.Error{Kind: model.KindScript, Provider: Provider, Err: fmt.Errorf("cassette %s: "+format, append([]any{c.name}, args...)...)}
}

func canceled(err error) error {
	kind := model.KindCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		kind = model.KindTimeout
	}
	return &model.Error{Kind: kind, Provider: Provider, Err: err}
}

// lastInput is the content of the last user or tool_result message.
func lastInput(msgs []model.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if r := msgs[i].Role; r == events.RoleUser || r == events.RoleToolResult {
			return msgs[i].Content, true
		}
	}
	return "", false
}

// clip shortens text quoted in an error.
func clip(s string) string {
	const n = 80
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}

// respond builds the response for a consumed entry.
func respond(e Entry, req model.Request) model.Response {
	out := model.Response{Content: e.Content, FinishReason: e.FinishReason, Model: e.Model}
	for _, tc := range e.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, events.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	if out.FinishReason == "" {
		out.FinishReason = "stop"
		if len(out.ToolCalls) > 0 {
			out.FinishReason = "tool_calls"
		}
	}
	if out.Model == "" {
		out.Model = req.Model
	}
	if e.Usage != nil {
		out.Usage = *e.Usage
		if out.Usage.TotalTokens == 0 {
			out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
		}
		if out.Usage.Calls == 0 {
			out.Usage.Calls = 1
		}
	} else {
		out.Usage = estimate(req, out)
	}
	return out
}

// estimate counts one token per four characters, rounded up: what was
// sent (messages and tool specs) as prompt, the answer as completion.
func estimate(req model.Request, resp model.Response) events.Usage {
	chars := func(msgs ...model.Message) int {
		n := 0
		for _, m := range msgs {
			n += utf8.RuneCountInString(m.Content)
			for _, tc := range m.ToolCalls {
				n += utf8.RuneCountInString(tc.Name) + utf8.RuneCountInString(tc.Arguments)
			}
		}
		return n
	}
	in := chars(req.Messages...)
	for _, t := range req.Tools {
		in += utf8.RuneCountInString(t.Name) + utf8.RuneCountInString(t.Description) + len(t.Parameters)
	}
	out := chars(model.Message{Content: resp.Content, ToolCalls: resp.ToolCalls})
	p, c := int64((in+3)/4), int64((out+3)/4)
	return events.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c, Calls: 1}
}
