package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
)

// Entry is one scripted response, or one simulated failure when Error is
// set.
type Entry struct {
	// Agent is a path.Match pattern on Request.Agent, like
	// "root.review.*"; empty matches any agent.
	Agent string `json:"agent,omitempty"`
	// Expect is a substring the request's last user or tool_result
	// message must contain.
	Expect string `json:"expect,omitempty"`

	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage, if nil, is estimated from the text.
	Usage        *events.Usage `json:"usage,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"`
	Model        string        `json:"model,omitempty"`

	Error *Failure `json:"error,omitempty"`
}

// ToolCall is a scripted tool call. In a cassette, arguments may be a JSON
// object or a string holding one.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// UnmarshalJSON accepts arguments as a string or as an inline JSON value.
func (tc *ToolCall) UnmarshalJSON(b []byte) error {
	var raw struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	tc.ID, tc.Name, tc.Arguments = raw.ID, raw.Name, ""
	args := bytes.TrimSpace(raw.Arguments)
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '"':
		return json.Unmarshal(args, &tc.Arguments)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			return err
		}
		tc.Arguments = buf.String()
	}
	return nil
}

// Failure is a simulated failed call.
type Failure struct {
	Kind         model.ErrorKind `json:"kind"`
	Status       int             `json:"status,omitempty"`
	RetryAfterMS int64           `json:"retry_after_ms,omitempty"`
	Message      string          `json:"message,omitempty"`
}

var kinds = []model.ErrorKind{model.KindRateLimit, model.KindServer, model.KindTimeout, model.KindConnection,
	model.KindBadRequest, model.KindAuth, model.KindMalformed, model.KindScript, model.KindCanceled}

// Load reads and checks a cassette file.
func Load(file string) (*Client, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCassette, err)
	}
	return parse(file, b)
}

// Parse checks a cassette held in memory.
func Parse(data []byte) (*Client, error) { return parse("(inline)", data) }

func parse(name string, data []byte) (*Client, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrCassette, name, fmt.Sprintf(format, args...))
	}
	var top struct {
		Scripted    *bool             `json:"scripted"`
		Description string            `json:"description"`
		Responses   []json.RawMessage `json:"responses"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return nil, fail("%s", jsonError(data, err))
	}
	if top.Scripted == nil || !*top.Scripted {
		return nil, fail(`missing "scripted": true (the label that says its responses are invented, not recorded)`)
	}
	if len(top.Responses) == 0 {
		return nil, fail("no responses")
	}
	entries := make([]Entry, len(top.Responses))
	for i, raw := range top.Responses {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&entries[i]); err != nil {
			return nil, fail("responses[%d]: %s", i, jsonError(raw, err))
		}
		if err := check(entries[i]); err != nil {
			return nil, fail("responses[%d]: %v", i, err)
		}
	}
	c := New(entries...)
	c.name, c.description = name, top.Description
	return c, nil
}

// check reports what makes an entry unusable.
func check(e Entry) error {
	if e.Agent != "" {
		if _, err := path.Match(e.Agent, ""); err != nil {
			return fmt.Errorf("agent pattern %q: %w", e.Agent, err)
		}
	}
	if e.Error != nil {
		if e.Content != "" || len(e.ToolCalls) > 0 || e.Usage != nil {
			return errors.New("an error entry cannot also have content, tool_calls or usage")
		}
		known := false
		for _, k := range kinds {
			known = known || e.Error.Kind == k
		}
		if !known {
			return fmt.Errorf("error kind %q is not one of %v", e.Error.Kind, kinds)
		}
		if e.Error.RetryAfterMS < 0 {
			return errors.New("retry_after_ms is negative")
		}
		return nil
	}
	for i, tc := range e.ToolCalls {
		if tc.Name == "" {
			return fmt.Errorf("tool_calls[%d] has no name", i)
		}
		if tc.Arguments != "" && !json.Valid([]byte(tc.Arguments)) {
			return fmt.Errorf("tool_calls[%d] (%s): arguments are not valid JSON", i, tc.Name)
		}
	}
	return nil
}

// jsonError adds the line and column to a JSON syntax error.
func jsonError(data []byte, err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Offset counts the offending byte too.
		end := max(min(int(syn.Offset), len(data))-1, 0)
		line, col := 1, 1
		for _, b := range data[:end] {
			if b == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Sprintf("line %d, column %d: %v", line, col, err)
	}
	return err.Error()
}

func (f *Failure) err() *model.Error {
	msg := f.Message
	if msg == "" {
		msg = "simulated failure"
	}
	return &model.Error{Kind: f.Kind, StatusCode: f.Status, RetryAfter: time.Duration(f.RetryAfterMS) * time.Millisecond,
		Provider: Provider, Err: errors.New(msg)}
}
