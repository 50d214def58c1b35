package events

// Event types written by the flow layer: workflows, tools, selectors and
// the agent loop. Unless said otherwise they go on the stream of the
// session they concern.
const (
	TypeWorkflowEntered   = "workflow.entered"
	TypeWorkflowExited    = "workflow.exited"
	TypeToolCalled        = "tool.called"
	TypeToolReturned      = "tool.returned"
	TypeSelectorDecided   = "selector.decided"
	TypeAgentCapped       = "agent.capped"
	TypeSessionCompressed = "session.compressed"
)

// DecisionStream is the side stream holding a selector's model calls and
// decisions about a session. They do not go on the session's own stream,
// so Select leaves the caller's handle current.
func DecisionStream(session string) string { return "decisions:" + session }

// WorkflowEntered records entering a workflow at a module path.
type WorkflowEntered struct {
	Session  string `json:"session"`
	Path     string `json:"path"`     // like "root.review.critic"
	Workflow string `json:"workflow"` // the Go type or given name
}

func (WorkflowEntered) EventType() string  { return TypeWorkflowEntered }
func (WorkflowEntered) EventVersion() int  { return 1 }
func (e WorkflowEntered) StreamID() string { return e.Session }
func (e WorkflowEntered) Validate() error {
	if e.Session == "" || e.Path == "" {
		return invalid("workflow.entered needs a session and a path")
	}
	return nil
}

// WorkflowExited records leaving a workflow: the session it produced
// (where this event is recorded) and the one it was given.
type WorkflowExited struct {
	Session      string `json:"session"`
	Path         string `json:"path"`
	InputSession string `json:"input_session"`
	Error        string `json:"error,omitempty"`
}

func (WorkflowExited) EventType() string  { return TypeWorkflowExited }
func (WorkflowExited) EventVersion() int  { return 1 }
func (e WorkflowExited) StreamID() string { return e.Session }
func (e WorkflowExited) Validate() error {
	if e.Session == "" || e.Path == "" {
		return invalid("workflow.exited needs a session and a path")
	}
	return nil
}

// FileChange is one file a tool wrote or deleted, with the content hash
// before and after (empty when absent). The contents are blobs.
type FileChange struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// ToolCalled records a tool call about to run.
type ToolCalled struct {
	Session   string `json:"session"`
	Agent     string `json:"agent,omitempty"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Backend   string `json:"backend,omitempty"`
	SandboxID string `json:"sandbox_id,omitempty"`
}

func (ToolCalled) EventType() string  { return TypeToolCalled }
func (ToolCalled) EventVersion() int  { return 1 }
func (e ToolCalled) StreamID() string { return e.Session }
func (e ToolCalled) Validate() error {
	if e.Session == "" || e.CallID == "" || e.Tool == "" {
		return invalid("tool.called needs a session, a call id and a tool")
	}
	return nil
}

// ToolReturned records a tool call's outcome. The full output is the blob
// OutputRef; ErrorKind is set when the call failed (unknown_tool,
// invalid_arguments, schema_violation, tool_error, timeout, panic,
// no_placement, ...).
type ToolReturned struct {
	Session    string       `json:"session"`
	Agent      string       `json:"agent,omitempty"`
	CallID     string       `json:"call_id"`
	Tool       string       `json:"tool"`
	OutputRef  string       `json:"output_ref"`
	OutputSize int          `json:"output_size"`
	ExitCode   *int         `json:"exit_code,omitempty"`
	DurationMS int64        `json:"duration_ms"`
	Files      []FileChange `json:"files,omitempty"`
	Backend    string       `json:"backend,omitempty"`
	SandboxID  string       `json:"sandbox_id,omitempty"`
	IsError    bool         `json:"is_error,omitempty"`
	ErrorKind  string       `json:"error_kind,omitempty"`
	Error      string       `json:"error,omitempty"`
	// Attachments are the result's parts beside its text (images, audio,
	// resources, structured content), their bytes kept as blobs.
	Attachments []ToolAttachment `json:"attachments,omitempty"`
	// Truncated is set when the tool cut its result to a size cap.
	Truncated *Truncation `json:"truncated,omitempty"`
}

// ToolAttachment is one part of a tool result kept beside its text.
type ToolAttachment struct {
	// Kind is image, audio, resource (embedded), resource_link or
	// structured (the result's structured content, as JSON).
	Kind string `json:"kind"`
	MIME string `json:"mime,omitempty"`
	// Ref is the blob of the part's bytes; empty for a link, or for a part
	// dropped by the size cap.
	Ref  string `json:"ref,omitempty"`
	Size int    `json:"size,omitempty"`
	URI  string `json:"uri,omitempty"`
	Name string `json:"name,omitempty"`
}

// Truncation says what a tool result's size cap (Limit bytes, for the
// text and for the binary parts each) left out.
type Truncation struct {
	Limit        int `json:"limit"`
	TextBytes    int `json:"text_bytes"`              // the text's size before the cut
	KeptText     int `json:"kept_text"`               // what the model got of it
	DroppedParts int `json:"dropped_parts,omitempty"` // binary parts not kept
}

func (ToolReturned) EventType() string  { return TypeToolReturned }
func (ToolReturned) EventVersion() int  { return 1 }
func (e ToolReturned) StreamID() string { return e.Session }
func (e ToolReturned) Validate() error {
	if e.Session == "" || e.CallID == "" {
		return invalid("tool.returned needs a session and a call id")
	}
	return nil
}

// SelectorDecided records a selector's choice among candidates, or none
// (Chosen empty). It goes on DecisionStream(Session).
type SelectorDecided struct {
	Session    string   `json:"session"`
	Path       string   `json:"path"`
	Candidates []string `json:"candidates"`
	Chosen     string   `json:"chosen,omitempty"`
	Attempts   int      `json:"attempts"`
	Reason     string   `json:"reason,omitempty"`
}

func (SelectorDecided) EventType() string { return TypeSelectorDecided }
func (SelectorDecided) EventVersion() int { return 1 }
func (e SelectorDecided) Validate() error {
	if e.Session == "" {
		return invalid("selector.decided needs a session")
	}
	return nil
}

// AgentCapped records that an agent loop stopped at its round cap with
// tool calls still pending.
type AgentCapped struct {
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Rounds  int    `json:"rounds"`
}

func (AgentCapped) EventType() string  { return TypeAgentCapped }
func (AgentCapped) EventVersion() int  { return 1 }
func (e AgentCapped) StreamID() string { return e.Session }

// SessionCompressed starts a session that replaces Source's chunks with
// Chunks (a summary, then optionally the last few of Source's chunks),
// with Source as its lineage parent (kind "compress").
type SessionCompressed struct {
	Session       string     `json:"session"`
	Source        string     `json:"source"`
	SourceVersion int64      `json:"source_version"`
	Chunks        []Chunk    `json:"chunks"`
	Placement     Placement  `json:"placement"`
	Usage         Usage      `json:"usage"`
	Derivation    Derivation `json:"derivation"`
}

func (SessionCompressed) EventType() string  { return TypeSessionCompressed }
func (SessionCompressed) EventVersion() int  { return 1 }
func (e SessionCompressed) StreamID() string { return e.Session }
func (e SessionCompressed) Validate() error {
	if err := validateDerived(e.Session, e.Source, 0); err != nil {
		return err
	}
	return validateChunks(e.Session, e.Chunks)
}

// BlobReferrer is implemented by payloads that reference blobs by hash,
// so copies of the log (replay, export) can carry the blobs along.
type BlobReferrer interface {
	BlobRefs() []string
}

// BlobRefs returns the request and response blobs.
func (e ProviderCalled) BlobRefs() []string { return nonEmpty(e.RequestRef, e.ResponseRef) }

// BlobRefs returns the request blob.
func (e ProviderFailed) BlobRefs() []string { return nonEmpty(e.RequestRef) }

// BlobRefs returns the output blob and the file contents before and after.
func (e ToolReturned) BlobRefs() []string {
	refs := nonEmpty(e.OutputRef)
	for _, f := range e.Files {
		refs = append(refs, nonEmpty(f.Before, f.After)...)
	}
	for _, a := range e.Attachments {
		refs = append(refs, nonEmpty(a.Ref)...)
	}
	return refs
}

func nonEmpty(refs ...string) []string {
	out := refs[:0:0]
	for _, r := range refs {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

// TypeEffectRecorded is the type of EffectRecorded.
const TypeEffectRecorded = "effect.recorded"

// EffectStream is the stream of a run's recorded side effects made at a
// module path (flow.Now, flow.Rand).
func EffectStream(run, path string) string { return "effects:" + run + ":" + path }

// EffectRecorded records a nondeterministic value a workflow used (the
// time, a random seed), so a replay gets the same one.
type EffectRecorded struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"` // now, rand
	Value string `json:"value"`
}

func (EffectRecorded) EventType() string { return TypeEffectRecorded }
func (EffectRecorded) EventVersion() int { return 1 }
func (e EffectRecorded) Validate() error {
	if e.Kind == "" {
		return invalid("effect.recorded needs a kind")
	}
	return nil
}
