package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"
)

const shellSchema = `{
  "type": "object",
  "properties": {
    "cmd": {"type": "string", "description": "The shell command, run with sh -c in the workspace root."}
  },
  "required": ["cmd"],
  "additionalProperties": false
}`

type shellArgs struct {
	Cmd string `json:"cmd"`
}

func (k *kit) shellTool() (flow.Tool, error) {
	desc := fmt.Sprintf("Run one shell command in the sandbox workspace and return its exit code, stdout and stderr. "+
		"It is killed after %s. Files it creates, modifies or deletes in the workspace are recorded.", k.opts.CommandTimeout)
	return flow.NewSchemaTool(RunShellCommand, desc, json.RawMessage(shellSchema), k.runShell,
		flow.WithToolTimeout(k.opts.CommandTimeout+trackingGrace))
}

func (k *kit) runShell(ctx context.Context, s *session.Session, raw json.RawMessage) (flow.ToolResult, error) {
	var args shellArgs
	if err := decodeArgs(raw, &args); err != nil {
		return flow.ToolResult{}, err
	}
	sb, res, err := k.open(ctx, s, RunShellCommand)
	if err != nil {
		return res, err
	}
	if args.Cmd == "" {
		return res, &flow.ToolError{Kind: flow.ToolErrSchema, Err: errors.New("cmd is empty")}
	}
	res, _, err = k.command(ctx, sb, res, sandbox.ExecRequest{Command: args.Cmd, Timeout: k.opts.CommandTimeout})
	return res, err
}

// command runs req between two workspace snapshots and fills res with the
// output, the exit code and the files the command changed. A timeout is a
// flow.ToolError of kind timeout whose message holds the partial output;
// the evidence (exit code, files) is in res either way.
func (k *kit) command(ctx context.Context, sb sandbox.Sandbox, res flow.ToolResult, req sandbox.ExecRequest) (flow.ToolResult, sandbox.ExecResult, error) {
	before := k.opts.Tracking.take(ctx, sb)
	out, execErr := sb.Exec(ctx, req)
	if execErr != nil && !errors.Is(execErr, sandbox.ErrTimeout) {
		// The command did not run to an exit status (cancelled, sandbox
		// closed, refused): nothing to compare.
		return res, out, &flow.ToolError{Kind: flow.ToolErrFailed, Err: fmt.Errorf("exec: %w", execErr)}
	}
	ch := diff(before, k.opts.Tracking.take(ctx, sb))
	code := out.ExitCode
	res.ExitCode = &code
	res.Files, res.Blobs = ch.files, ch.blobs
	res.Content = formatExec(out) + ch.summary(k.opts.Tracking)
	res.IsError = code != 0
	if execErr != nil {
		return res, out, &flow.ToolError{Kind: flow.ToolErrTimeout, Err: fmt.Errorf(
			"%w (the command was killed); output so far:\n%s", execErr, res.Content)}
	}
	return res, out, nil
}
