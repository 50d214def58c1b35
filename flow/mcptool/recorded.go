package mcptool

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// Spec is what a model and a replay see of an MCP tool: enough to offer
// the same tool again without its server. Runs record the specs of their
// MCP tools so that a replay, which answers tool calls from the log, can
// make the same model requests with the servers stopped.
type Spec struct {
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Schema      json.RawMessage      `json:"schema"`
	Server      string               `json:"server"`
	Remote      string               `json:"remote"` // the tool's name on the server
	Annotations flow.ToolAnnotations `json:"annotations,omitzero"`
}

// SpecOf returns the spec of a tool made by Manager.Tools; ok is false
// for any other tool.
func SpecOf(t flow.Tool) (Spec, bool) {
	mt, ok := t.(*tool)
	if !ok {
		return Spec{}, false
	}
	return Spec{Name: mt.name, Description: mt.desc, Schema: mt.schema, Server: mt.server, Remote: mt.remote, Annotations: mt.ann}, true
}

// ErrRecordedOnly is what a tool rebuilt by Recorded answers if called:
// its server is not connected, only its record is known.
var ErrRecordedOnly = errors.New("mcptool: this tool was rebuilt from a record for a replay and has no server to call")

// Recorded returns tools with the specs' names, descriptions, schemas and
// annotations whose calls fail with ErrRecordedOnly: what a replay that
// answers tool calls from the log needs.
func Recorded(specs []Spec) []flow.Tool {
	out := make([]flow.Tool, len(specs))
	for i, s := range specs {
		out[i] = recordedTool{s}
	}
	return out
}

type recordedTool struct{ s Spec }

func (t recordedTool) Name() string                      { return t.s.Name }
func (t recordedTool) Description() string               { return t.s.Description }
func (t recordedTool) Schema() json.RawMessage           { return t.s.Schema }
func (t recordedTool) ParallelSafe() bool                { return t.s.Annotations.ReadOnly }
func (t recordedTool) Annotations() flow.ToolAnnotations { return t.s.Annotations }

func (t recordedTool) Call(context.Context, *session.Session, json.RawMessage) (flow.ToolResult, error) {
	return flow.ToolResult{Backend: Backend, SandboxID: Backend + ":" + t.s.Server}, &flow.ToolError{Kind: KindServerGone, Err: ErrRecordedOnly}
}
