package model

import (
	"context"
	"encoding/json"

	"github.com/gorath/rath/events"
)

// Message is one entry of the conversation sent to a model. It is the
// session chunk type: roles system, user, assistant (with tool calls),
// tool_result, summary and memory. Clients map summary and memory chunks
// to the closest role their API has (system text or user text).
type Message = events.Chunk

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON Schema object
}

// Sampling holds the optional sampling fields. Nil or zero means the
// provider's default.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int     `json:"seed,omitempty"`
	Stop        []string `json:"stop,omitempty"`
}

// Tool choice values for Request.ToolChoice; any other value names the one
// tool the model must call.
const (
	ToolChoiceAuto     = ""
	ToolChoiceRequired = "required"
	ToolChoiceNone     = "none"
)

// Request is one model call.
type Request struct {
	// Agent is the module path of the calling agent (like
	// "root.review.critic"). It is not sent to the API; scripted cassettes
	// use it to route responses to agents running in parallel.
	Agent      string     `json:"agent,omitempty"`
	Model      string     `json:"model"`
	Messages   []Message  `json:"messages"`
	Tools      []ToolSpec `json:"tools,omitempty"`
	ToolChoice string     `json:"tool_choice,omitempty"`
	Sampling   Sampling   `json:"sampling"`
}

// Response is a model's answer.
type Response struct {
	Content      string            `json:"content"`
	ToolCalls    []events.ToolCall `json:"tool_calls,omitempty"`
	Usage        events.Usage      `json:"usage"`
	FinishReason string            `json:"finish_reason,omitempty"`
	Model        string            `json:"model,omitempty"` // as reported by the API
}

// Client makes one model call: no retries, no recording.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// ClientFunc makes a function a Client: a model written in a few lines
// (tests, examples, a rule-based stand-in).
type ClientFunc func(ctx context.Context, req Request) (Response, error)

// Complete calls f.
func (f ClientFunc) Complete(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }

// Delta is one streamed fragment. Content deltas have Content set; tool
// call deltas have ToolCallIndex and any of ToolCallID, ToolName and
// Arguments (a fragment to concatenate).
type Delta struct {
	Content       string `json:"content,omitempty"`
	ToolCallIndex int    `json:"tool_call_index,omitempty"`
	ToolCallID    string `json:"tool_call_id,omitempty"`
	ToolName      string `json:"tool_name,omitempty"`
	Arguments     string `json:"arguments,omitempty"`
}

// Replayer is the optional capability of a Client that keeps state
// across calls (a cassette's position): in a resumed run, Replayed is
// told each call the record answered instead of it, with the recorded
// response, so its next live answer follows on from them.
type Replayer interface {
	Replayed(req Request, resp Response)
}

// Streamer is the optional streaming capability of a Client. Stream calls
// onDelta for each fragment as it arrives and returns the assembled
// response, the same a Complete call would give.
type Streamer interface {
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}
