package telemetry

import (
	"context"
	"encoding/json"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// Message content is exported only on opt-in (Settings.CaptureContent),
// in the JSON shape the GenAI conventions give gen_ai.input.messages and
// gen_ai.output.messages, with secrets scrubbed.

func (t *translator) inputMessages(ctx context.Context, st *runState, ref string) (string, bool) {
	if t.blobs == nil || ref == "" {
		return "", false
	}
	if st.loader == nil {
		st.loader = flow.NewRequestLoader(t.blobs)
	}
	req, err := st.loader.Load(ctx, ref)
	if err != nil {
		return "", false
	}
	msgs := make([]message, 0, len(req.Messages))
	for _, m := range req.Messages {
		msgs = append(msgs, t.message(m, ""))
	}
	return t.encode(msgs)
}

func (t *translator) outputMessages(r model.Response) string {
	m := t.message(events.Chunk{Role: events.RoleAssistant, Content: r.Content, ToolCalls: r.ToolCalls}, r.FinishReason)
	s, _ := t.encode([]message{m})
	return s
}

// message and part follow the conventions' JSON shape for
// gen_ai.input.messages and gen_ai.output.messages.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

func (t *translator) message(c events.Chunk, finish string) message {
	m := message{Role: c.Role, FinishReason: finish, Parts: []part{}}
	switch c.Role {
	case events.RoleToolResult:
		m.Role = "tool"
		m.Parts = append(m.Parts, part{Type: "tool_call_response", ID: c.ToolCallID, Response: t.scrub(c.Content)})
		return m
	case events.RoleSummary, events.RoleMemory:
		m.Role = "user"
	}
	if c.Content != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: t.scrub(c.Content)})
	}
	for _, tc := range c.ToolCalls {
		args := json.RawMessage(t.scrub(tc.Arguments))
		if !json.Valid(args) {
			args, _ = json.Marshal(string(args))
		}
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return m
}

func (t *translator) encode(msgs []message) (string, bool) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return "", false
	}
	return string(b), true
}
