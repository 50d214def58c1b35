package jsonl

import (
	"encoding/json"

	"github.com/gorath/rath/events"
)

// Record types.
const (
	RecordHeader  = "header"
	RecordChunk   = "chunk"
	RecordTrailer = "trailer"
)

// Formats recorded in events.SessionImported.Format.
const (
	// FormatOpenRath marks a file written by the Python OpenRath v1.x.
	FormatOpenRath = "openrath-v1"
	// FormatExport marks a file written by Export.
	FormatExport = "rath-export"
)

// FormatVersion is the version of the rath export extras written by
// Export in the header's "version" field.
const FormatVersion = 1

// Chunk kinds of the OpenRath format.
const (
	KindSystem     = "system"
	KindUser       = "user"
	KindAssistant  = "assistant"
	KindToolResult = "tool_result"
)

// MaxLineBytes is the default bound of one line of input
// (Options.MaxLineBytes), so a file with a huge line, or none, cannot
// exhaust memory: a line is held a few times over while it is decoded.
const MaxLineBytes = 16 << 20

// record is every field any record type may carry; which ones must be set
// depends on record_type. Pointers tell "absent" from zero where that
// matters.
type record struct {
	RecordType string `json:"record_type"`

	// header
	ID               string          `json:"id"`
	ParentSessionIDs []string        `json:"parent_session_ids"`
	LineageKind      string          `json:"lineage_kind"`
	SandboxBackend   string          `json:"sandbox_backend"`
	SandboxSpec      json.RawMessage `json:"sandbox_spec"`
	Format           string          `json:"format"`
	Incomplete       bool            `json:"incomplete"`

	// chunk
	Index   *int64          `json:"index"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`

	// trailer
	FinalChunkCount *int64     `json:"final_chunk_count"`
	CumulativeUsage *wireUsage `json:"cumulative_usage"`
}

// wireHeader is the header as Export writes it: the OpenRath fields first,
// then the rath extras.
type wireHeader struct {
	RecordType       string   `json:"record_type"`
	ID               string   `json:"id"`
	ParentSessionIDs []string `json:"parent_session_ids"`
	LineageKind      string   `json:"lineage_kind"`
	SandboxBackend   string   `json:"sandbox_backend"`
	SandboxSpec      string   `json:"sandbox_spec"`
	Format           string   `json:"format"`
	Version          int      `json:"version"`
	Source           string   `json:"source,omitempty"`
	Origin           string   `json:"origin,omitempty"`
	SessionVersion   int64    `json:"session_version"`
	Incomplete       bool     `json:"incomplete,omitempty"`
}

type wireChunk struct {
	RecordType string      `json:"record_type"`
	Index      int64       `json:"index"`
	Kind       string      `json:"kind"`
	Payload    wirePayload `json:"payload"`
}

type wireTrailer struct {
	RecordType      string    `json:"record_type"`
	FinalChunkCount int64     `json:"final_chunk_count"`
	CumulativeUsage wireUsage `json:"cumulative_usage"`
}

// wirePayload is a chunk payload. Content is a pointer because OpenAI-style
// assistant messages carry "content": null next to tool calls.
type wirePayload struct {
	Content    *string        `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	Rath       *wireExtras    `json:"rath,omitempty"`
}

// wireExtras are the chunk fields rath has and OpenRath does not.
type wireExtras struct {
	Role   string            `json:"role,omitempty"`
	Author string            `json:"author,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// wireFunction keeps Arguments raw: OpenAI sends a JSON string, but some
// writers store the decoded object.
type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	Calls            int64 `json:"calls,omitempty"`
}

func (u wireUsage) usage() events.Usage {
	return events.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens, Calls: u.Calls}
}

func toWireUsage(u events.Usage) wireUsage {
	return wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens, Calls: u.Calls}
}
