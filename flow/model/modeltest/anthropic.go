package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/gorath/rath/flow/model/internal/textsplit"
)

// NewAnthropic starts a fake Anthropic messages server for the test.
func NewAnthropic(t testing.TB) *Server {
	t.Helper()
	return newServer(t, flavor{
		name:        "anthropic",
		path:        "/v1/messages",
		errorBody:   anthropicError,
		body:        anthropicBody,
		events:      anthropicEvents,
		streamError: anthropicStreamError,
	}, "")
}

func anthropicError(status int, msg string) []byte {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	if msg == "" {
		msg = statusText(status)
	}
	return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// anthropicStreamError is an error inside a stream: an "error" event
// holding the error object.
func anthropicStreamError(status int, msg string) string {
	return sse("error", anthropicError(status, msg))
}

func anthropicStop(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_use"
	default:
		return "end_turn"
	}
}

// anthropicInput is a call's arguments as the input object; the API
// sends {} for a call without arguments.
func anthropicInput(args string) json.RawMessage {
	if args == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

func anthropicBlocks(r Reply, seq int) []any {
	var blocks []any
	if r.Content != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": r.Content})
	}
	for i, c := range r.ToolCalls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": anthropicCallID(c.ID, seq, i), "name": c.Name, "input": anthropicInput(c.Arguments)})
	}
	if blocks == nil {
		blocks = []any{}
	}
	return blocks
}

func anthropicCallID(id string, seq, i int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("toolu_%d_%d", seq, i)
}

func anthropicBody(r Reply, model string, seq int) []byte {
	return mustJSON(map[string]any{
		"id": fmt.Sprintf("msg_%d", seq), "type": "message", "role": "assistant", "model": model,
		"content": anthropicBlocks(r, seq), "stop_reason": anthropicStop(r), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.Usage.PromptTokens, "output_tokens": r.Usage.CompletionTokens},
	})
}

func anthropicEvents(r Reply, _ map[string]any, model string, seq int) []string {
	ev := func(v map[string]any) string { return sse(v["type"].(string), mustJSON(v)) }
	evs := []string{ev(map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", seq), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.Usage.PromptTokens, "output_tokens": 1},
	}}), sse("ping", []byte(`{"type": "ping"}`))}
	index := 0
	if r.Content != "" {
		evs = append(evs, ev(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
		for _, w := range textsplit.Words(r.Content) {
			evs = append(evs, ev(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": w}}))
		}
		evs = append(evs, ev(map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	for i, c := range r.ToolCalls {
		evs = append(evs, ev(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": anthropicCallID(c.ID, seq, i), "name": c.Name, "input": map[string]any{}}}))
		for _, frag := range textsplit.Fragments(c.Arguments, argFragment) {
			evs = append(evs, ev(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": frag}}))
		}
		evs = append(evs, ev(map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	return append(evs,
		ev(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": r.Usage.CompletionTokens}}),
		ev(map[string]any{"type": "message_stop"}))
}
