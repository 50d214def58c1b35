package modeltest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorath/rath/events"
)

// Reply is one scripted answer. The zero value is an empty successful
// completion. Whether it is sent as JSON or as an event stream follows the
// request ("stream": true), so the same Reply serves Complete and Stream.
type Reply struct {
	// Content is the assistant text. Streams send it in word-sized deltas.
	Content string
	// ToolCalls are the calls the model makes, in order. Streams send each
	// call's arguments in fragments of a few bytes. An empty ID gets a
	// generated one (call_N for OpenAI, toolu_N for Anthropic).
	ToolCalls []events.ToolCall
	// Usage is reported as is (Calls is ignored); TotalTokens, if zero, is
	// the sum of the other two.
	Usage events.Usage
	// FinishReason defaults to stop or tool_calls (OpenAI) and end_turn or
	// tool_use (Anthropic).
	FinishReason string
	// Model defaults to the model named in the request.
	Model string
	// NoUsage leaves the usage object out (OpenAI-compatible servers that
	// report none, even when a stream asks for it); Usage is then unused.
	NoUsage bool

	// Status is the HTTP status; 0 means 200. From 400 up, the body is the
	// provider's error object carrying Message.
	Status  int
	Message string
	// RetryAfter, if set, is sent as the Retry-After header.
	RetryAfter string

	// Raw, if set, is sent verbatim as the body (with Status), as
	// application/json or text/event-stream per the request: for malformed
	// JSON or a stream that ends without its terminator.
	Raw string
	// CutAfter, if positive, drops the connection abruptly: after that
	// many events of a stream, or after that many bytes of a JSON body
	// (whose Content-Length promised more).
	CutAfter int
	// ErrorAfter, if positive, ends a stream after that many events with
	// the vendor's error event for a server error (a 500 delivered inside
	// a 200 stream, carrying Message): OpenAI's `data: {"error": …}`,
	// Anthropic's `event: error`. The stream then closes without its
	// terminator, as the vendors' servers do.
	ErrorAfter int
	// Delay holds the answer back this long, or until the client gives up
	// (for cancellation and timeout tests).
	Delay time.Duration
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header // as received, including the credentials
	Body   []byte      // the raw JSON body
}

// Decode unmarshals the body into v; use a map[string]any to assert on
// the wire JSON, or the SDK's request type.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// Stream reports whether the request asked for a streamed answer.
func (r Request) Stream() bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Stream
}

func (r Reply) total() int64 {
	if r.Usage.TotalTokens != 0 {
		return r.Usage.TotalTokens
	}
	return r.Usage.PromptTokens + r.Usage.CompletionTokens
}
