package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"
)

// open returns the sandbox of the session's placement and a result holding
// its evidence (backend and sandbox id), which every return path of a tool
// keeps, errors included: the loop records the result's evidence even when
// the call failed.
func (k *kit) open(ctx context.Context, s *session.Session, tool string) (sandbox.Sandbox, flow.ToolResult, error) {
	pl := s.Placement()
	res := flow.ToolResult{Backend: pl.Backend}
	if pl.Backend == "" {
		return nil, res, &flow.ToolError{Kind: flow.ToolErrNoPlacement, Err: fmt.Errorf(
			"%s needs a sandbox, but session %s has no placement: place it first, for example s, err = s.To(ctx, \"local\", \"./work\")",
			tool, s.ID())}
	}
	sb, err := k.pool.Get(ctx, pl)
	if errors.Is(err, sandbox.ErrNoPlacement) {
		return nil, res, &flow.ToolError{Kind: flow.ToolErrNoPlacement, Err: err}
	}
	if err != nil {
		return nil, res, &flow.ToolError{Kind: flow.ToolErrFailed, Err: fmt.Errorf("%s: %w", tool, err)}
	}
	res.SandboxID = sb.ID()
	return sb, res, nil
}

// decodeArgs decodes a tool's arguments; the loop has already checked them
// against the schema, so a failure here means a direct caller skipped that.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return &flow.ToolError{Kind: flow.ToolErrSchema, Err: fmt.Errorf("arguments: %w", err)}
	}
	return nil
}

// fileError turns a sandbox file error into a tool error whose message
// names the operation and the path as the model gave it, with a hint for
// the mistakes a model can correct. The sandbox's sentinel stays in the
// chain for errors.Is.
func fileError(op, path string, err error) error {
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	var hint string
	switch {
	case errors.Is(cause, sandbox.ErrPathEscape):
		hint = " (paths are relative to the workspace root and must stay inside it)"
	case errors.Is(cause, sandbox.ErrNotFound):
		hint = " (list_workspace_files shows what exists)"
	case errors.Is(cause, sandbox.ErrTooLarge):
		hint = " (use run_shell_command with head, tail or grep to see part of it)"
	}
	return &flow.ToolError{Kind: flow.ToolErrFailed, Err: fmt.Errorf("%s %q: %w%s", op, path, cause, hint)}
}
