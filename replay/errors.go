package replay

import (
	"errors"
	"fmt"
)

var (
	// ErrDiverged is matched by a *Divergence.
	ErrDiverged = errors.New("replay: diverged")
	// ErrNotFound is returned for an unknown run.
	ErrNotFound = errors.New("replay: run not found")
	// ErrNotResumable is returned by Resume for a run that finished.
	ErrNotResumable = errors.New("replay: run is not resumable")
	// ErrCounterfactual is returned by NewCounterfactual for a seq it
	// cannot fork at (not the run's, not a model answer or tool result).
	ErrCounterfactual = errors.New("replay: cannot fork a counterfactual there")
)

// NotOneAgentError is returned by Counterfactual.Continue for a run whose
// workflow is not one agent (a sequence, a router, parallel branches): a
// counterfactual continues one agent from the forked call, on a fork of
// its session; going on from the middle of a workflow of several agents
// would need the workflow re-executed from its start, which it does not
// do. It matches ErrCounterfactual.
type NotOneAgentError struct {
	Run      string
	Workflow string // the run's recorded workflow name
}

func (e *NotOneAgentError) Error() string {
	return fmt.Sprintf("replay: cannot fork a counterfactual of run %s: its workflow %q is not one agent, and a counterfactual continues one agent (a rath run run, or a program's single-agent workflow) from the replaced call", e.Run, e.Workflow)
}

// Is makes errors.Is(err, ErrCounterfactual) true.
func (e *NotOneAgentError) Is(target error) bool { return target == ErrCounterfactual }

// Divergence classes.
const (
	ClassMismatch = "mismatch" // both sides have the event, with different content
	ClassMissing  = "missing"  // the record has it, the replay did not produce it
	ClassExtra    = "extra"    // the replay produced it, the record does not have it
)

// Kinds of change (Divergence.Change).
const (
	ChangeStructural = "structural" // another tool, other arguments, other messages, tools or settings
	ChangeWording    = "wording"    // the same structure with other text
)

// Divergence is the first point where a replay differs from the record.
type Divergence struct {
	Class   string `json:"class"`
	Seq     int64  `json:"seq"` // the recorded seq (for extra: the last recorded seq before it)
	Type    string `json:"type"`
	Stream  string `json:"stream"`
	Version int64  `json:"version"`
	Want    string `json:"want,omitempty"` // recorded payload, canonical JSON
	Got     string `json:"got,omitempty"`  // replayed payload
	Diff    string `json:"diff,omitempty"` // readable field diff
	Hint    string `json:"hint"`
	// Change is what kind of difference this is, where the replay can
	// tell: ChangeStructural (another tool, other arguments, other
	// messages, tools or settings) or ChangeWording (the same structure,
	// other text); "" when it cannot tell.
	Change string `json:"change,omitempty"`
	// Unanswered is set when the replay stopped at a call the record has
	// no answer for (a changed or extra request): going on from there
	// needs a live answer.
	Unanswered bool `json:"unanswered,omitempty"`
}

func (d *Divergence) Error() string {
	where := d.Stream
	if d.Version > 0 { // unknown for a call the record does not have
		where = fmt.Sprintf("%s v%d", d.Stream, d.Version)
	}
	msg := fmt.Sprintf("replay: %s at seq %d (%s on %s): %s", d.Class, d.Seq, d.Type, where, d.Hint)
	if d.Diff != "" {
		msg += "\n" + d.Diff
	}
	return msg
}

// Is makes errors.Is(err, ErrDiverged) true.
func (d *Divergence) Is(target error) bool { return target == ErrDiverged }
