package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/internal/textsplit"
)

// NewOpenAI starts a fake OpenAI chat-completions server for the test.
func NewOpenAI(t testing.TB) *Server {
	t.Helper()
	return newServer(t, flavor{
		name:        "openai",
		path:        "/v1/chat/completions",
		errorBody:   openaiError,
		body:        openaiBody,
		events:      openaiEvents,
		streamError: openaiStreamError,
	}, "/v1")
}

// argFragment is the size of the tool-argument fragments in streams:
// small enough that any real argument object arrives in several pieces.
const argFragment = 4

func openaiError(status int, msg string) []byte {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	if msg == "" {
		msg = statusText(status)
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

// openaiStreamError is an error inside a stream: a data line holding the
// error object, with no event name.
func openaiStreamError(status int, msg string) string { return sse("", openaiError(status, msg)) }

func openaiCallID(c events.ToolCall, seq, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%d_%d", seq, i)
}

func openaiFinish(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func openaiUsage(r Reply) map[string]any {
	return map[string]any{"prompt_tokens": r.Usage.PromptTokens, "completion_tokens": r.Usage.CompletionTokens, "total_tokens": r.total()}
}

func openaiBody(r Reply, model string, seq int) []byte {
	msg := map[string]any{"role": "assistant", "content": r.Content}
	if r.Content == "" && len(r.ToolCalls) > 0 {
		msg["content"] = nil // what the API sends for a tool-only answer
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]map[string]any, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			calls[i] = map[string]any{"id": openaiCallID(c, seq, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	body := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", seq), "object": "chat.completion", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": openaiFinish(r)}},
		"usage":   openaiUsage(r),
	}
	if r.NoUsage {
		delete(body, "usage")
	}
	return mustJSON(body)
}

func openaiEvents(r Reply, req map[string]any, model string, seq int) []string {
	chunk := func(delta map[string]any, finish any) string {
		return sse("", mustJSON(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", seq), "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}))
	}
	evs := []string{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, w := range textsplit.Words(r.Content) {
		evs = append(evs, chunk(map[string]any{"content": w}, nil))
	}
	for i, c := range r.ToolCalls {
		// The first fragment of a call carries its id and name, later ones
		// only the index and a piece of the arguments, as the API does.
		evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": openaiCallID(c, seq, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, frag := range textsplit.Fragments(c.Arguments, argFragment) {
			evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": frag}}}}, nil))
		}
	}
	evs = append(evs, chunk(map[string]any{}, openaiFinish(r)))
	if opts, _ := req["stream_options"].(map[string]any); opts["include_usage"] == true && !r.NoUsage {
		evs = append(evs, sse("", mustJSON(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", seq), "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{}, "usage": openaiUsage(r),
		})))
	}
	return append(evs, "data: [DONE]\n\n")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("modeltest: %v", err)) // only plain maps and strings are marshalled
	}
	return b
}
