package events

import (
	"encoding/json"
	"fmt"
)

// Event type names. The names are part of the stored format: never rename one.
const (
	TypeSessionCreated  = "session.created"
	TypeChunkAppended   = "chunk.appended"
	TypeSessionForked   = "session.forked"
	TypeSessionDetached = "session.detached"
	TypeSessionMerged   = "session.merged"
	TypeSessionPlaced   = "session.placed"
	TypeSessionImported = "session.imported"
	TypeProviderCalled  = "provider.called"
	TypeProviderFailed  = "provider.failed"
	TypeRunStarted      = "run.started"
	TypeRunFinished     = "run.finished"
)

// Chunk roles.
const (
	RoleSystem     = "system"
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolResult = "tool_result"
	RoleSummary    = "summary"
	RoleMemory     = "memory"
)

var roles = map[string]bool{RoleSystem: true, RoleUser: true, RoleAssistant: true, RoleToolResult: true, RoleSummary: true, RoleMemory: true}

// ValidRole reports whether r is one of the chunk roles.
func ValidRole(r string) bool { return roles[r] }

// Chunk is one entry of a session transcript.
type Chunk struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	// Author is the module path of the workflow or agent that wrote it
	// (like "root.review.critic"), empty for chunks written by the caller.
	Author string            `json:"author,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
}

// Validate checks the role and the tool-result fields.
func (c Chunk) Validate() error {
	if !ValidRole(c.Role) {
		return invalid("chunk role %q is not one of system, user, assistant, tool_result, summary, memory", c.Role)
	}
	if c.Role == RoleToolResult && c.ToolCallID == "" {
		return invalid("tool_result chunk needs a tool_call_id")
	}
	for i, tc := range c.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return invalid("tool call %d needs an id and a name", i)
		}
	}
	return nil
}

// ToolCall is a model's request to call a tool, as carried by an assistant chunk.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage counts model tokens and calls.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	Calls            int64 `json:"calls"`
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		Calls:            u.Calls + o.Calls,
	}
}

// Placement says where a session's tools run.
type Placement struct {
	Backend string `json:"backend,omitempty"`
	Spec    string `json:"spec,omitempty"`
}

// Derivation records the inputs a session id was derived from, so the id
// can be re-derived and checked: the seed, the scope (the parent session or
// empty for roots), the operation and the counter within the scope.
type Derivation struct {
	Seed    string `json:"seed"`
	Scope   string `json:"scope"`
	Op      string `json:"op"`
	Counter int64  `json:"counter"`
}

// SessionCreated starts a root session stream.
type SessionCreated struct {
	Session    string     `json:"session"`
	Origin     string     `json:"origin"` // user, agent_prompt, empty
	Chunks     []Chunk    `json:"chunks,omitempty"`
	Derivation Derivation `json:"derivation"`
}

func (SessionCreated) EventType() string  { return TypeSessionCreated }
func (SessionCreated) EventVersion() int  { return 1 }
func (e SessionCreated) StreamID() string { return e.Session }
func (e SessionCreated) Validate() error  { return validateChunks(e.Session, e.Chunks) }

// ChunkAppended adds one chunk at Index to a session.
type ChunkAppended struct {
	Session string `json:"session"`
	Index   int64  `json:"index"`
	Chunk   Chunk  `json:"chunk"`
}

func (ChunkAppended) EventType() string  { return TypeChunkAppended }
func (ChunkAppended) EventVersion() int  { return 1 }
func (e ChunkAppended) StreamID() string { return e.Session }
func (e ChunkAppended) Validate() error {
	if e.Session == "" {
		return invalid("chunk.appended needs a session")
	}
	if e.Index < 0 {
		return invalid("chunk index %d is negative", e.Index)
	}
	return e.Chunk.Validate()
}

// SessionForked starts a session that shares the first BaseLen chunks of
// Source as of SourceVersion, with Source as its lineage parent.
type SessionForked struct {
	Session       string     `json:"session"`
	Source        string     `json:"source"`
	SourceVersion int64      `json:"source_version"`
	BaseLen       int64      `json:"base_len"`
	Placement     Placement  `json:"placement"`
	Usage         Usage      `json:"usage"` // inherited from Source
	Derivation    Derivation `json:"derivation"`
}

func (SessionForked) EventType() string  { return TypeSessionForked }
func (SessionForked) EventVersion() int  { return 1 }
func (e SessionForked) StreamID() string { return e.Session }
func (e SessionForked) Validate() error  { return validateDerived(e.Session, e.Source, e.BaseLen) }

// SessionDetached starts a session that shares Source's chunks but has no
// lineage parent. The event keeps the provenance for audit.
type SessionDetached struct {
	Session       string     `json:"session"`
	Source        string     `json:"source"`
	SourceVersion int64      `json:"source_version"`
	BaseLen       int64      `json:"base_len"`
	Placement     Placement  `json:"placement"`
	Derivation    Derivation `json:"derivation"`
}

func (SessionDetached) EventType() string  { return TypeSessionDetached }
func (SessionDetached) EventVersion() int  { return 1 }
func (e SessionDetached) StreamID() string { return e.Session }
func (e SessionDetached) Validate() error  { return validateDerived(e.Session, e.Source, e.BaseLen) }

// ParentRef names a merge parent at a version.
type ParentRef struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
	Len     int64  `json:"len"`
}

// SessionMerged starts a session whose chunks are the first parent's
// chunks followed by Chunks (each other parent's chunks after its common
// prefix with the first).
type SessionMerged struct {
	Session    string      `json:"session"`
	Parents    []ParentRef `json:"parents"`
	Strategy   string      `json:"strategy"`
	Chunks     []Chunk     `json:"chunks,omitempty"`
	Placement  Placement   `json:"placement"`
	Usage      Usage       `json:"usage"` // every call in the parents' lineages, once
	Derivation Derivation  `json:"derivation"`
}

func (SessionMerged) EventType() string  { return TypeSessionMerged }
func (SessionMerged) EventVersion() int  { return 1 }
func (e SessionMerged) StreamID() string { return e.Session }
func (e SessionMerged) Validate() error {
	if len(e.Parents) < 2 {
		return invalid("session.merged needs at least two parents, got %d", len(e.Parents))
	}
	if err := validateDerived(e.Session, e.Parents[0].ID, e.Parents[0].Len); err != nil {
		return err
	}
	return validateChunks(e.Session, e.Chunks)
}

// SessionPlaced moves a session to a sandbox backend.
type SessionPlaced struct {
	Session string `json:"session"`
	Backend string `json:"backend"`
	Spec    string `json:"spec"`
}

func (SessionPlaced) EventType() string  { return TypeSessionPlaced }
func (SessionPlaced) EventVersion() int  { return 1 }
func (e SessionPlaced) StreamID() string { return e.Session }
func (e SessionPlaced) Validate() error {
	if e.Session == "" || e.Backend == "" {
		return invalid("session.placed needs a session and a backend")
	}
	return nil
}

// SessionImported starts a session read from a file written elsewhere (an
// OpenRath v1 JSONL file or a rath export). Its chunks follow as
// chunk.appended events in the same transaction.
type SessionImported struct {
	Session     string    `json:"session"`
	Format      string    `json:"format"` // openrath-v1, rath-export
	File        string    `json:"file,omitempty"`
	Parents     []string  `json:"parents,omitempty"` // only parents present in the store
	LineageKind string    `json:"lineage_kind,omitempty"`
	Placement   Placement `json:"placement"`
	Usage       Usage     `json:"usage"`
	Incomplete  bool      `json:"incomplete,omitempty"` // no trailer: the writer crashed
	// DeclaredParents are the parent ids the file named, present or not.
	DeclaredParents []string `json:"declared_parents,omitempty"`
	// DeclaredPlacement is the placement the file named, kept as
	// provenance: Placement is set from it only when the importer
	// accepted it (see session/jsonl.Options.Placement).
	DeclaredPlacement *Placement `json:"declared_placement,omitempty"`
}

func (SessionImported) EventType() string  { return TypeSessionImported }
func (SessionImported) EventVersion() int  { return 1 }
func (e SessionImported) StreamID() string { return e.Session }
func (e SessionImported) Validate() error {
	if e.Session == "" {
		return invalid("session.imported needs a session id")
	}
	return nil
}

// ProviderCalled records one model call: request and response are blob
// references (hex SHA-256), usage and latency are inline. It goes on the
// session's stream for agent calls, or on a side stream (a selector's
// decisions), which is why it names its session explicitly.
type ProviderCalled struct {
	Session     string `json:"session"`
	Agent       string `json:"agent,omitempty"`
	Provider    string `json:"provider,omitempty"`
	Model       string `json:"model"`
	RequestRef  string `json:"request_ref,omitempty"`
	ResponseRef string `json:"response_ref,omitempty"`
	Digest      string `json:"digest,omitempty"` // request digest, for replay
	Usage       Usage  `json:"usage"`
	LatencyMS   int64  `json:"latency_ms"`
	Attempt     int    `json:"attempt"`
	Streamed    bool   `json:"streamed,omitempty"`
}

func (ProviderCalled) EventType() string { return TypeProviderCalled }
func (ProviderCalled) EventVersion() int { return 1 }
func (e ProviderCalled) Validate() error {
	if e.Session == "" {
		return invalid("provider.called needs a session")
	}
	return nil
}

// ProviderFailed records a failed model call attempt.
type ProviderFailed struct {
	Session    string `json:"session"`
	Agent      string `json:"agent,omitempty"`
	Provider   string `json:"provider,omitempty"`
	Model      string `json:"model"`
	ErrorKind  string `json:"error_kind"`
	Error      string `json:"error"`
	Attempt    int    `json:"attempt"`
	WillRetry  bool   `json:"will_retry"`
	LatencyMS  int64  `json:"latency_ms"`
	RequestRef string `json:"request_ref,omitempty"`
	Digest     string `json:"digest,omitempty"`
}

func (ProviderFailed) EventType() string { return TypeProviderFailed }
func (ProviderFailed) EventVersion() int { return 1 }

// RunStarted opens a run stream.
type RunStarted struct {
	Run          string `json:"run"`
	Workflow     string `json:"workflow"`
	InputSession string `json:"input_session,omitempty"`
	Seed         string `json:"seed"`
	CodeVersion  string `json:"code_version,omitempty"`
	ParentRun    string `json:"parent_run,omitempty"`
	// Params are the workflow's parameters, enough to rebuild it by name
	// (a model, a tool list; never a key).
	Params map[string]string `json:"params,omitempty"`
	// Tenant is the tenant the run belongs to, and with it its sessions
	// and approvals; empty (absent in runs recorded before tenants) means
	// DefaultTenant.
	Tenant string `json:"tenant,omitempty"`
	// Subject is whose content the run is ("user:ID", rath.WithSubject);
	// empty for a run whose content is its own ("run:ID"). A resume
	// seals what it adds under the same subject.
	Subject string `json:"subject,omitempty"`
}

func (RunStarted) EventType() string  { return TypeRunStarted }
func (RunStarted) EventVersion() int  { return 1 }
func (e RunStarted) StreamID() string { return e.Run }
func (e RunStarted) Validate() error {
	if e.Run == "" {
		return invalid("run.started needs a run id")
	}
	return checkTenantOf("run.started", e.Tenant)
}

// RunFinished closes a run stream.
type RunFinished struct {
	Run           string `json:"run"`
	Status        string `json:"status"` // ok, error
	Error         string `json:"error,omitempty"`
	OutputSession string `json:"output_session,omitempty"`
}

func (RunFinished) EventType() string  { return TypeRunFinished }
func (RunFinished) EventVersion() int  { return 1 }
func (e RunFinished) StreamID() string { return e.Run }
func (e RunFinished) Validate() error {
	if e.Run == "" || e.Status == "" {
		return invalid("run.finished needs a run id and a status")
	}
	return nil
}

func validateChunks(session string, chunks []Chunk) error {
	if session == "" {
		return invalid("event needs a session id")
	}
	for i, c := range chunks {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	return nil
}

func validateDerived(session, source string, baseLen int64) error {
	if session == "" || source == "" {
		return invalid("derived session needs an id and a source")
	}
	if session == source {
		return invalid("session %q cannot derive from itself", session)
	}
	if baseLen < 0 {
		return invalid("base_len %d is negative", baseLen)
	}
	return nil
}

// Upcasts declares, for one event type, the upcaster from each old
// version v to v+1. When a type's struct changes incompatibly, bump its
// EventVersion and declare the upcaster from the old version next to it
// in buildCatalogue; Decode then reads events stored at any older version
// as the current struct.
type upcasts map[int]upcaster

func buildCatalogue() map[string]*typeInfo {
	c := map[string]*typeInfo{}
	add := func(newFn func() Payload, ups ...upcasts) {
		p := newFn()
		ti := &typeInfo{version: p.EventVersion(), newFn: newFn, upcasters: map[int]upcaster{}}
		for _, u := range ups {
			for v, f := range u {
				ti.upcasters[v] = f
			}
		}
		if err := ti.check(p.EventType()); err != nil {
			panic(err) // a catalogue bug: fails every test at init
		}
		c[p.EventType()] = ti
	}
	add(func() Payload { return &SessionCreated{} })
	add(func() Payload { return &ChunkAppended{} })
	add(func() Payload { return &SessionForked{} })
	add(func() Payload { return &SessionDetached{} })
	add(func() Payload { return &SessionMerged{} })
	add(func() Payload { return &SessionPlaced{} })
	add(func() Payload { return &SessionImported{} })
	add(func() Payload { return &ProviderCalled{} })
	add(func() Payload { return &ProviderFailed{} })
	add(func() Payload { return &RunStarted{} })
	add(func() Payload { return &RunFinished{} })
	add(func() Payload { return &RunSubmitted{} })
	add(func() Payload { return &RunLeased{} })
	add(func() Payload { return &RunResumed{} })
	add(func() Payload { return &MemoryRemembered{} })
	add(func() Payload { return &MemoryForgotten{} })
	add(func() Payload { return &MemoryRecalled{} })
	add(func() Payload { return &MemoryCommitted{} })
	add(func() Payload { return &WorkflowEntered{} })
	add(func() Payload { return &WorkflowExited{} })
	add(func() Payload { return &ToolCalled{} })
	add(func() Payload { return &ToolReturned{} })
	add(func() Payload { return &SelectorDecided{} })
	add(func() Payload { return &AgentCapped{} })
	add(func() Payload { return &SessionCompressed{} })
	add(func() Payload { return &EffectRecorded{} })
	add(func() Payload { return &SecretRedacted{} })
	add(func() Payload { return &ApprovalRequested{} })
	// Version 2 added who vouched for the decider (issuer, via).
	add(func() Payload { return &ApprovalDecided{} }, upcasts{1: func(raw json.RawMessage) (json.RawMessage, error) { return raw, nil }})
	add(func() Payload { return &DatasetCreated{} })
	add(func() Payload { return &DatasetItemAdded{} })
	add(func() Payload { return &ExperimentStarted{} })
	add(func() Payload { return &ScoreRecorded{} })
	add(func() Payload { return &TokenCreated{} })
	add(func() Payload { return &TokenRevoked{} })
	add(func() Payload { return &AccessViewed{} })
	add(func() Payload { return &CounterfactualForked{} })
	// Version 2 added shapes; a version 1 record has none.
	add(func() Payload { return &EvidenceRedacted{} }, upcasts{1: func(raw json.RawMessage) (json.RawMessage, error) { return raw, nil }})
	add(func() Payload { return &EvidenceErased{} })
	return c
}

// check reports a type whose old versions cannot all be upcast to the
// current one.
func (ti *typeInfo) check(typ string) error {
	for v := 1; v < ti.version; v++ {
		if ti.upcasters[v] == nil {
			return fmt.Errorf("events: catalogue: %s is at version %d but has no upcaster from version %d", typ, ti.version, v)
		}
	}
	for v := range ti.upcasters {
		if v < 1 || v >= ti.version {
			return fmt.Errorf("events: catalogue: %s has an upcaster from version %d, outside 1..%d", typ, v, ti.version-1)
		}
	}
	return nil
}
