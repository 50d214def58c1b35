package flow

import (
	"errors"
	"fmt"
)

var (
	// ErrMaxRounds is matched by a *MaxRoundsError.
	ErrMaxRounds = errors.New("flow: agent hit its round cap")
	// ErrBudget is matched by a *BudgetError.
	ErrBudget = errors.New("flow: provider budget exhausted")
	// ErrBranch is matched by a *BranchError.
	ErrBranch = errors.New("flow: parallel branch failed")
	// ErrNoSelection is returned when a selector's model gave no valid
	// choice twice.
	ErrNoSelection = errors.New("flow: selector made no valid choice")
	// ErrProvider is returned for a provider that cannot be resolved
	// (unknown kind, no model, missing key, bad config file).
	ErrProvider = errors.New("flow: provider configuration")
	// ErrTool is returned by NewTool for an unusable tool definition.
	ErrTool = errors.New("flow: invalid tool")
	// ErrMaxSteps is returned by a Router whose selector had not chosen
	// "none" after its MaxSteps steps.
	ErrMaxSteps = errors.New("flow: router hit its step cap")
	// ErrNotRebuildable is matched by a *NotRebuildableError: a Spec
	// holding a layer the log does not describe.
	ErrNotRebuildable = errors.New("flow: the workflow cannot be rebuilt from its record")
	// ErrRecordedTool is the error of a tool rebuilt from a Spec that is
	// called: its calls must be answered from the record.
	ErrRecordedTool = errors.New("flow: a tool rebuilt from a record cannot run; its calls are answered from the log")
)

// NotRebuildableError names the first layer of a Spec that cannot be
// rebuilt from the log, by its place in the tree ("root", "root.step1",
// "root.reviewers.branch0": the names the layers were given, else their
// kind and index), and why.
type NotRebuildableError struct {
	Path   string
	Reason string
}

func (e *NotRebuildableError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrNotRebuildable, e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrNotRebuildable) match.
func (e *NotRebuildableError) Is(target error) bool { return target == ErrNotRebuildable }

// MaxRoundsError reports an agent loop stopped at its cap while the model
// still asked for tools. The session returned alongside it holds
// everything done so far.
type MaxRoundsError struct {
	Agent  string
	Rounds int
}

func (e *MaxRoundsError) Error() string {
	return fmt.Sprintf("flow: agent %s stopped after %d rounds with tool calls pending (raise it with WithMaxRounds)", e.Agent, e.Rounds)
}

// Is makes errors.Is(err, ErrMaxRounds) true.
func (e *MaxRoundsError) Is(target error) bool { return target == ErrMaxRounds }

// BudgetError reports a provider call refused by the budget.
type BudgetError struct {
	Provider string
	Limit    string // "tokens" or "calls"
	Max      int64
	Used     int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("flow: provider %s budget exhausted: %d of %d %s used", e.Provider, e.Used, e.Max, e.Limit)
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// BranchError reports the parallel branch that failed first.
type BranchError struct {
	Index int
	Name  string
	Err   error
}

func (e *BranchError) Error() string {
	return fmt.Sprintf("flow: parallel branch %d (%s) failed: %v", e.Index, e.Name, e.Err)
}

func (e *BranchError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBranch) true.
func (e *BranchError) Is(target error) bool { return target == ErrBranch }

// Tool error kinds, recorded on tool_result chunks (meta "error_kind") and
// tool.returned events.
const (
	ToolErrUnknown     = "unknown_tool"
	ToolErrBadJSON     = "invalid_arguments"
	ToolErrSchema      = "schema_violation"
	ToolErrFailed      = "tool_error"
	ToolErrTimeout     = "timeout"
	ToolErrPanic       = "panic"
	ToolErrNoPlacement = "no_placement"
)

// ToolError is a typed tool failure. A tool may return one to choose the
// kind; any other error is recorded as ToolErrFailed.
type ToolError struct {
	Kind string
	Err  error
}

func (e *ToolError) Error() string { return fmt.Sprintf("%s: %v", e.Kind, e.Err) }

func (e *ToolError) Unwrap() error { return e.Err }
