package oracle

import (
	"context"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
)

// Oracle answers model calls and tool calls from a record instead of
// making them: the replay engine (package replay) installs one with
// With. An answer with Live set tells the caller to make the call
// for real (a resumed or forked run past its recorded prefix).
type Oracle interface {
	// Model answers one model call attempt.
	Model(ctx context.Context, call ModelCall) (ModelAnswer, error)
	// Tool answers one tool call.
	Tool(ctx context.Context, call ToolCall) (ToolAnswer, error)
	// Recall answers a memory recall made for an agent.
	Recall(ctx context.Context, call RecallCall) (RecallAnswer, error)
	// Commit answers an agent's commit to memory with its recorded place
	// in the namespace's stream; the caller computes the commit itself.
	Commit(ctx context.Context, call CommitCall) (CommitAnswer, error)
	// Effect answers a side effect (flow.Now, flow.Rand) made at a path.
	Effect(ctx context.Context, call EffectCall) (EffectAnswer, error)
	// Approval answers a request for a person's decision from the
	// record: a replay never asks anybody.
	Approval(ctx context.Context, call ApprovalCall) (ApprovalAnswer, error)
}

// ApprovalCall identifies a request for approval or an answer.
type ApprovalCall struct {
	ID      string
	Session string
	Agent   string
	CallID  string
}

// ApprovalAnswer is the recorded decision; nil Decision: nobody decided
// yet (the run waits again).
type ApprovalAnswer struct {
	Decision *events.ApprovalDecided
}

// EffectCall identifies a side effect being replayed.
type EffectCall struct {
	Path, Kind string
}

// EffectAnswer is a recorded side effect's value.
type EffectAnswer struct {
	Live  bool
	Value string
}

// RecallCall identifies a recall being replayed.
type RecallCall struct {
	Session, Agent, Namespace, Query string
}

// RecallAnswer is a recorded recall's hits.
type RecallAnswer struct {
	Live bool
	Hits []events.MemoryHit
	// Error is the recorded failure of a recall the agent went on
	// without.
	Error string
}

// CommitCall identifies a commit to memory being replayed.
type CommitCall struct {
	Session, Agent, Namespace string
}

// CommitAnswer places a recorded commit: the caller computes the commit
// again with the replayed code and appends its events at the recorded
// stream version, so the replay compares them with the record. The record
// supplies only the position (the memory ids derive from it), never the
// memos.
type CommitAnswer struct {
	Live bool
	// First is the stream version of the recorded commit's first event.
	First int64
	// Recorded is the recorded memory.committed event: a backend whose
	// commit is a server's answer (memory.CommitReplayer) takes the
	// answer from it.
	Recorded *events.MemoryCommitted
}

// ModelCall identifies a model call attempt being replayed.
type ModelCall struct {
	Session string
	Agent   string // module path
	Digest  string // RequestDigest of the request
	Attempt int
	Request model.Request
}

// ModelAnswer is a recorded model call attempt's outcome.
type ModelAnswer struct {
	Live     bool
	Response model.Response
	Err      error // a recorded failure, rebuilt as a *model.Error
	Latency  time.Duration
	// Retry, with Err, says the record goes on with another attempt of
	// this call even if the provider's retry budget said stop: the run
	// was retried as a whole after this failure (package fleet), so the
	// replay retries too instead of failing where the record did not.
	Retry bool
}

// ToolCall identifies a tool call being replayed.
type ToolCall struct {
	Session   string
	Agent     string
	CallID    string
	Tool      string
	Arguments string
}

// ToolAnswer is a recorded tool call's outcome.
type ToolAnswer struct {
	Live      bool
	Result    ToolResult
	ErrorKind string
	Error     string
	Duration  time.Duration
	// Seq is the recorded tool.returned event's seq (0 if the record has
	// none). Calls of one round were recorded in the order they finished;
	// the loop writes recorded answers in this order, so a replay writes
	// the same versions whatever order its calls finish in.
	Seq int64
	// Questions are the questions the tool asked a person while it ran
	// (flow.Ask): the caller records them again, since the tool does not
	// run.
	Questions []events.ApprovalRequested
}

// ToolResult is a recorded tool result; it has the fields of
// flow.ToolResult, which converts to and from it.
type ToolResult struct {
	Content     string
	IsError     bool
	Backend     string
	SandboxID   string
	ExitCode    *int
	Files       []events.FileChange
	Blobs       [][]byte
	Attachments []events.ToolAttachment
	Truncated   *events.Truncation
}

type key struct{}

// With returns a context in which model and tool calls are answered by o.
func With(ctx context.Context, o Oracle) context.Context {
	return context.WithValue(ctx, key{}, o)
}

// From returns the oracle installed in ctx, or nil.
func From(ctx context.Context) Oracle {
	o, _ := ctx.Value(key{}).(Oracle)
	return o
}

// replayedError says exactly what the recorded failure said (a replay
// records it again, and the two must match) and unwraps to a
// *model.Error of the recorded kind, so callers branch on it as before.
type replayedError struct {
	msg   string
	model *model.Error
}

func (e *replayedError) Error() string { return e.msg }
func (e *replayedError) Unwrap() error { return e.model }

// RecordedFailure rebuilds the error of a recorded provider.failed event
// as an error of its kind with the recorded text.
func RecordedFailure(f *events.ProviderFailed) error {
	return &replayedError{msg: f.Error, model: &model.Error{Kind: model.ErrorKind(f.ErrorKind), Provider: f.Provider}}
}
