package dossier

import (
	"fmt"
	"strings"
	"time"

	"github.com/gorath/rath"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
)

// Defaults for Options; a zero field takes these.
const (
	// DefaultTextLimit is how many bytes of one text (a chunk, a tool
	// output, a message) the HTML and Markdown show before cutting it with
	// a note. The JSONL output is never cut this way.
	DefaultTextLimit = 16 << 10
	// DefaultInlineBlobLimit is the largest blob the JSONL output carries
	// inline with its event.
	DefaultInlineBlobLimit = 16 << 10
	// DefaultDiffLimit is how many lines of one file diff are shown.
	DefaultDiffLimit = 2000
)

// Options configure Build and the renderers.
type Options struct {
	// Replay is the verdict of a replay of the run, shown as is. Nil means
	// the run was not replayed, and the dossier says so.
	Replay *replay.Report
	// Head, if set, is a head recorded elsewhere earlier; the chain is
	// verified against it (see eventlog.VerifyOptions.Head).
	Head *eventlog.Head
	// Attestation, if set, is the attestation of a verified bundle of the
	// run (package bundle, rath dossier --bundle), shown as is.
	Attestation *Attestation
	// SkipVerify skips verification (the hash chain, every blob, and the
	// projections against a rebuild), which reads the whole log. The chain
	// head is still shown.
	SkipVerify bool
	// TextLimit is the most bytes of one text shown in HTML and Markdown.
	// Zero means DefaultTextLimit; negative means no limit.
	TextLimit int
	// InlineBlobLimit is the largest blob inlined in JSONL output. Zero
	// means DefaultInlineBlobLimit; negative inlines none.
	InlineBlobLimit int
	// DiffLimit is the most lines of one file diff shown in HTML and
	// Markdown. Zero means DefaultDiffLimit; negative means no limit.
	DiffLimit int
}

func (o Options) textLimit() int {
	if o.TextLimit == 0 {
		return DefaultTextLimit
	}
	return o.TextLimit
}

func (o Options) inlineBlobLimit() int {
	if o.InlineBlobLimit == 0 {
		return DefaultInlineBlobLimit
	}
	return o.InlineBlobLimit
}

func (o Options) diffLimit() int {
	if o.DiffLimit == 0 {
		return DefaultDiffLimit
	}
	return o.DiffLimit
}

// Dossier is everything the log says about one run. Build fills it; the
// renderers only read it, so one Dossier may be rendered concurrently.
type Dossier struct {
	Run       Run             `json:"run"`
	Chain     Chain           `json:"chain"`
	Replay    *replay.Report  `json:"replay,omitempty"`
	Sessions  []*Session      `json:"sessions"`
	Graph     Graph           `json:"graph"`
	Tools     []*ToolCall     `json:"tools"`
	Providers []*ProviderCall `json:"providers"`
	Agents    []AgentUsage    `json:"agents"`
	Memory    []MemoryEvent   `json:"memory"`
	Decisions []Decision      `json:"decisions"`
	Approvals []Approval      `json:"approvals"`
	// Scores are the experiments' scores of the run.
	Scores    []Score        `json:"scores"`
	Workflows []WorkflowSpan `json:"workflows"`
	Events    []Event        `json:"events"`
	// Attestation is the attestation of the run's bundle, when one was
	// given and verified.
	Attestation *Attestation `json:"attestation,omitempty"`
	// Warnings are problems met while building (a missing blob, an event
	// that does not decode): the dossier shows what it could.
	Warnings []string `json:"warnings,omitempty"`

	opts      Options
	blobs     map[string][]byte // the blobs the run's events reference
	bySession map[string]*Session
}

// Run is the run's record.
type Run struct {
	ID            string            `json:"id"`
	Workflow      string            `json:"workflow"`
	Status        string            `json:"status"` // running (never finished), ok, error
	Error         string            `json:"error,omitempty"`
	Seed          string            `json:"seed"`
	CodeVersion   string            `json:"code_version,omitempty"`
	ParentRun     string            `json:"parent_run,omitempty"`
	Params        map[string]string `json:"params,omitempty"`
	InputSession  string            `json:"input_session,omitempty"`
	OutputSession string            `json:"output_session,omitempty"`
	StartedSeq    int64             `json:"started_seq"`
	FinishedSeq   int64             `json:"finished_seq,omitempty"` // 0 if it never finished
	StartedAt     time.Time         `json:"started_at"`             // as recorded on run.started
	FinishedAt    time.Time         `json:"finished_at"`            // zero if it never finished
	Events        int               `json:"events"`
	// Usage sums the usage of the run's successful provider calls.
	Usage events.Usage `json:"usage"`
}

// Chain is the integrity evidence.
type Chain struct {
	// Head is the last event of the whole log when the dossier was built.
	Head eventlog.Head `json:"head"`
	// First and Last are the run's first and last events: keep Last to
	// check later (rath verify --head) that the run was not rewritten.
	First eventlog.Head `json:"first"`
	Last  eventlog.Head `json:"last"`
	// Verify is the verification of the whole chain, its blobs and the
	// projections the dossier is read from; nil when skipped.
	Verify *rath.VerifyReport `json:"verify,omitempty"`
}

// Attestation is what an attested run bundle of the run says, once
// verified: who signed it, who witnessed its checkpoint, and the tree its
// events are proven in.
type Attestation struct {
	Bundle      string   `json:"bundle"` // the bundle's directory
	SignedBy    string   `json:"signed_by"`
	KeyID       string   `json:"key_id"`
	WitnessedBy []string `json:"witnessed_by"`
	Origin      string   `json:"origin"`
	Size        int64    `json:"checkpoint_size"`
	Root        string   `json:"checkpoint_root"`
	FirstSeq    int64    `json:"first_seq"`
	LastSeq     int64    `json:"last_seq"`
	Replay      string   `json:"replay"`
	// LogKeyPinned is true when the bundle was verified with the log key
	// the auditor gave (--log-key), false with the bundle's own.
	LogKeyPinned bool `json:"log_key_pinned"`
	// WitnessKeys are the witness keys whose cosignatures verified, by
	// key id; WitnessesPinned is true when the auditor pinned witnesses
	// (--witness-key), one of which cosigned.
	WitnessKeys     []Witness `json:"witness_keys,omitempty"`
	WitnessesPinned bool      `json:"witnesses_pinned"`
}

// Witness is a witness key that cosigned a bundle's checkpoint.
type Witness struct {
	Name   string `json:"name"`
	KeyID  string `json:"key_id"` // hex SHA-256 of its PKIX DER public key
	Pinned bool   `json:"pinned"`
}

// Witnesses names the witnesses with their key ids and whether the
// auditor pinned them, or says there were none.
func (a *Attestation) Witnesses() string {
	var parts []string
	for _, w := range a.WitnessKeys {
		p := "pinned"
		if !w.Pinned {
			p = "NOT pinned"
		}
		parts = append(parts, fmt.Sprintf("%s (key %s, %s)", w.Name, w.KeyID, p))
	}
	if len(parts) == 0 {
		parts = a.WitnessedBy
	}
	s := "no witness"
	if len(parts) > 0 {
		s = strings.Join(parts, ", ")
	}
	if !a.WitnessesPinned {
		s += "; no witness pinned (--witness-key): the bundle names its witnesses itself"
	}
	return s
}

// LogKey says whether the signer's key was the auditor's or the bundle's.
func (a *Attestation) LogKey() string {
	if a.LogKeyPinned {
		return "pinned"
	}
	return "NOT pinned: the bundle's own key (--log-key)"
}

// Verified says exactly what a passed verification proved, or "" when it
// was skipped or failed.
func (c Chain) Verified() string {
	v := c.Verify
	if v == nil || !v.OK() {
		return ""
	}
	s := fmt.Sprintf("hash chain of %d events and %d blobs recomputed", v.Events, v.Blobs)
	if p := v.Projections; p != nil {
		s += fmt.Sprintf("; the sessions, transcripts, lineage, usage and runs shown equal a rebuild from the log through seq %d (%d rows compared)", p.Seq, p.Rows)
	}
	if a := v.Attestation; a != nil {
		s += "; checkpoints: " + a.Summary()
	}
	return s
}

// Session is one node of the dossier: a session the run touched, or a
// lineage parent of one, shown as context.
type Session struct {
	ID     string `json:"id"`
	Anchor string `json:"anchor"`
	Kind   string `json:"kind"`
	Origin string `json:"origin,omitempty"`
	// Author is the first workflow path seen on the session in the run,
	// else the author of its first own chunk, else its origin.
	Author    string           `json:"author,omitempty"`
	Parents   []string         `json:"parents,omitempty"`
	Source    string           `json:"source,omitempty"` // what it was derived from, detached or not
	Placement events.Placement `json:"placement"`
	// Usage and Version are as of the run's last event.
	Usage      events.Usage `json:"usage"`
	Version    int64        `json:"version"`
	CreatedSeq int64        `json:"created_seq"`
	// InRun is false for context nodes: parents the run did not touch.
	InRun bool `json:"in_run"`
	// Chunks is the transcript as of the run's last event (empty for
	// context nodes).
	Chunks []Chunk `json:"chunks,omitempty"`
	// Loops are the workflow paths entered more than once on the session.
	Loops []Loop `json:"loops,omitempty"`
}

// Chunk is a transcript entry with where it is stored.
type Chunk struct {
	events.Chunk
	Index int `json:"index"`
	// Home is the session whose row holds it; for a chunk inherited
	// through a fork it is an ancestor.
	Home      string `json:"home"`
	HomeIndex int    `json:"home_index"`
	// New marks chunks written by this run.
	New bool `json:"new,omitempty"`
	// ToolAnchors link each of the chunk's tool calls (assistant chunks)
	// or its result (tool_result chunks) to its ToolCall, "" if unknown.
	ToolAnchors []string `json:"tool_anchors,omitempty"`
}

// Loop is a workflow path a session entered more than once.
type Loop struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
}

// ToolCall pairs a tool.called with its tool.returned.
type ToolCall struct {
	Anchor     string     `json:"anchor"`
	Seq        int64      `json:"seq"`                  // tool.called, or tool.returned if the call was not recorded
	ReturnSeq  int64      `json:"return_seq,omitempty"` // 0 if it never returned
	Session    string     `json:"session"`
	Agent      string     `json:"agent,omitempty"`
	CallID     string     `json:"call_id"`
	Tool       string     `json:"tool"`
	Arguments  string     `json:"arguments"`
	Backend    string     `json:"backend,omitempty"`
	SandboxID  string     `json:"sandbox_id,omitempty"`
	Returned   bool       `json:"returned"`
	Output     []byte     `json:"-"`
	OutputRef  string     `json:"output_ref,omitempty"`
	OutputSize int        `json:"output_size"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	IsError    bool       `json:"is_error,omitempty"`
	ErrorKind  string     `json:"error_kind,omitempty"`
	Error      string     `json:"error,omitempty"`
	Files      []FileDiff `json:"files,omitempty"`
	// Attachments are the result's parts beside its text (an MCP tool's
	// images, resources, structured content); Truncated, its size cap.
	Attachments []Attachment       `json:"attachments,omitempty"`
	Truncated   *events.Truncation `json:"truncated,omitempty"`
}

// Attachment is one recorded part of a tool result, with its bytes when
// they were kept.
type Attachment struct {
	events.ToolAttachment
	Data []byte `json:"-"`
}

// OK reports whether the call returned without an error.
func (t *ToolCall) OK() bool { return t.Returned && t.ErrorKind == "" && !t.IsError }

// File change statuses.
const (
	FileCreated  = "created"
	FileModified = "modified"
	FileDeleted  = "deleted"
)

// FileDiff is one file a tool changed, with a unified line diff of its
// recorded contents.
type FileDiff struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Before string `json:"before,omitempty"` // content hashes
	After  string `json:"after,omitempty"`
	// Note says why no diff is shown (binary, content not recorded).
	Note    string     `json:"note,omitempty"`
	Lines   []DiffLine `json:"lines,omitempty"`
	Added   int        `json:"added"`
	Removed int        `json:"removed"`
}

// ProviderCall is one model call attempt: a provider.called or a
// provider.failed.
type ProviderCall struct {
	Anchor    string       `json:"anchor"`
	Seq       int64        `json:"seq"`
	Stream    string       `json:"stream"`
	Session   string       `json:"session"`
	Agent     string       `json:"agent,omitempty"`
	Provider  string       `json:"provider,omitempty"`
	Model     string       `json:"model"`
	Attempt   int          `json:"attempt"`
	Streamed  bool         `json:"streamed,omitempty"`
	Usage     events.Usage `json:"usage"`
	LatencyMS int64        `json:"latency_ms"`
	Digest    string       `json:"digest,omitempty"`
	Failed    bool         `json:"failed,omitempty"`
	ErrorKind string       `json:"error_kind,omitempty"`
	Error     string       `json:"error,omitempty"`
	WillRetry bool         `json:"will_retry,omitempty"`
	// Request is rebuilt from the recorded blobs; nil if it could not be.
	Request *model.Request `json:"request,omitempty"`
	// SharedPrefix is how many of Request's first messages equal those of
	// the request of PrefixCall (the anchor of the previous call of the
	// same agent on the same session). Renderers show only the rest, so
	// an agent loop of n calls costs O(n) and not O(n²) to display.
	SharedPrefix int             `json:"shared_prefix,omitempty"`
	PrefixCall   string          `json:"prefix_call,omitempty"`
	Response     *model.Response `json:"response,omitempty"`
}

// AgentUsage sums the provider calls of one agent path.
type AgentUsage struct {
	Agent     string       `json:"agent"`
	Calls     int          `json:"calls"`
	Failures  int          `json:"failures"`
	Usage     events.Usage `json:"usage"`
	LatencyMS int64        `json:"latency_ms"`
}

// MemoryEvent is a memory write, recall or tombstone.
type MemoryEvent struct {
	Seq       int64              `json:"seq"`
	Type      string             `json:"type"`
	Namespace string             `json:"namespace"`
	ID        string             `json:"id,omitempty"`
	Text      string             `json:"text,omitempty"`
	Query     string             `json:"query,omitempty"`
	K         int                `json:"k,omitempty"`
	Hits      []events.MemoryHit `json:"hits,omitempty"`
	IDs       []string           `json:"ids,omitempty"`
	Model     string             `json:"model,omitempty"`
	Session   string             `json:"session,omitempty"`
	Agent     string             `json:"agent,omitempty"`
	Meta      map[string]string  `json:"meta,omitempty"`
}

// Decision is a selector's choice.
type Decision struct {
	Seq        int64    `json:"seq"`
	Session    string   `json:"session"`
	Path       string   `json:"path"`
	Candidates []string `json:"candidates"`
	Chosen     string   `json:"chosen,omitempty"` // "" for none
	Attempts   int      `json:"attempts"`
	Reason     string   `json:"reason,omitempty"`
}

// WorkflowSpan is a workflow.entered with its workflow.exited.
type WorkflowSpan struct {
	Path     string `json:"path"`
	Workflow string `json:"workflow"`
	Depth    int    `json:"depth"`            // dots in Path
	Session  string `json:"session"`          // entered on
	Output   string `json:"output,omitempty"` // exited on; "" if it never exited
	EnterSeq int64  `json:"enter_seq"`
	ExitSeq  int64  `json:"exit_seq,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Event is one of the run's events with a one-line summary.
type Event struct {
	events.Event
	Summary string `json:"summary"`
	// refs are the blobs the event references, with the message segment
	// of a provider request.
	refs []string
}
