package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// DefaultToolTimeout bounds a tool call whose tool sets no timeout.
const DefaultToolTimeout = 2 * time.Minute

// Tool is an op an agent's model can call.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the arguments object.
	Schema() json.RawMessage
	// Call runs the tool on the session (read-only: tools record evidence
	// through their result, the loop writes it). args are valid JSON that
	// passed the schema.
	Call(ctx context.Context, s *session.Session, args json.RawMessage) (ToolResult, error)
}

// ParallelSafe is implemented by tools that may run concurrently with
// other calls in the same round.
type ParallelSafe interface {
	ParallelSafe() bool
}

// TimeoutTool is implemented by tools with their own timeout.
type TimeoutTool interface {
	Timeout() time.Duration
}

// ArgumentValidator is implemented by tools that validate their arguments
// against their schema; the loop calls it before Call and records a
// violation as ToolErrSchema.
type ArgumentValidator interface {
	ValidateArguments(args json.RawMessage) error
}

// ToolResult is what a tool call produced, with its evidence.
type ToolResult struct {
	// Content goes to the model as the tool_result chunk.
	Content string
	// IsError marks a result the tool considers a failure (a command that
	// exited non-zero, say) that is still worth showing the model.
	IsError bool
	// Evidence, recorded on tool.returned.
	Backend   string
	SandboxID string
	ExitCode  *int
	Files     []events.FileChange
	// Blobs are stored with the evidence (file contents before and after,
	// referenced by Files' hashes, and the attachments' bytes).
	Blobs [][]byte
	// Attachments and Truncated are recorded on tool.returned as they are.
	Attachments []events.ToolAttachment
	Truncated   *events.Truncation
}

// ToolOption configures NewTool.
type ToolOption func(*funcTool)

// WithToolTimeout sets the tool's timeout.
func WithToolTimeout(d time.Duration) ToolOption { return func(t *funcTool) { t.timeout = d } }

// WithParallelSafe marks the tool safe to run concurrently.
func WithParallelSafe() ToolOption { return func(t *funcTool) { t.parallel = true } }

// NewTool returns a tool whose argument schema is derived from the struct
// type A (field names from json tags, descriptions from jsonschema tags,
// omitempty fields optional) and whose calls decode the arguments into an
// A and call fn.
func NewTool[A any](name, description string, fn func(ctx context.Context, s *session.Session, args A) (string, error), opts ...ToolOption) (Tool, error) {
	if name == "" || fn == nil {
		return nil, fmt.Errorf("%w: a tool needs a name and a function", ErrTool)
	}
	schema, err := jsonschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: schema from %T: %v", ErrTool, name, *new(A), err)
	}
	return newSchemaTool(name, description, schema, func(ctx context.Context, s *session.Session, raw json.RawMessage) (ToolResult, error) {
		var args A
		if err := json.Unmarshal(raw, &args); err != nil {
			return ToolResult{}, &ToolError{Kind: ToolErrSchema, Err: err}
		}
		out, err := fn(ctx, s, args)
		return ToolResult{Content: out}, err
	}, opts...)
}

// NewSchemaTool returns a tool with an explicit JSON Schema whose calls get
// the raw arguments.
func NewSchemaTool(name, description string, schema json.RawMessage, fn func(ctx context.Context, s *session.Session, args json.RawMessage) (ToolResult, error), opts ...ToolOption) (Tool, error) {
	var sc jsonschema.Schema
	if err := json.Unmarshal(schema, &sc); err != nil {
		return nil, fmt.Errorf("%w: %s: schema: %v", ErrTool, name, err)
	}
	return newSchemaTool(name, description, &sc, fn, opts...)
}

func newSchemaTool(name, description string, schema *jsonschema.Schema, fn func(context.Context, *session.Session, json.RawMessage) (ToolResult, error), opts ...ToolOption) (Tool, error) {
	if name == "" || fn == nil {
		return nil, fmt.Errorf("%w: a tool needs a name and a function", ErrTool)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: resolve schema: %v", ErrTool, name, err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTool, name, err)
	}
	t := &funcTool{name: name, description: description, schema: raw, resolved: resolved, fn: fn}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

type funcTool struct {
	name, description string
	schema            json.RawMessage
	resolved          *jsonschema.Resolved
	fn                func(context.Context, *session.Session, json.RawMessage) (ToolResult, error)
	timeout           time.Duration
	parallel          bool
}

func (t *funcTool) Name() string            { return t.name }
func (t *funcTool) Description() string     { return t.description }
func (t *funcTool) Schema() json.RawMessage { return t.schema }
func (t *funcTool) ParallelSafe() bool      { return t.parallel }
func (t *funcTool) Timeout() time.Duration  { return t.timeout }

func (t *funcTool) ValidateArguments(args json.RawMessage) error {
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return err
	}
	return t.resolved.Validate(instance)
}

func (t *funcTool) Call(ctx context.Context, s *session.Session, args json.RawMessage) (ToolResult, error) {
	return t.fn(ctx, s, args)
}
