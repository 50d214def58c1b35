package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"
)

const pathProperty = `"path": {"type": "string", "description": "A path relative to the workspace root, like notes/todo.md."}`

const readSchema = `{
  "type": "object",
  "properties": {` + pathProperty + `},
  "required": ["path"],
  "additionalProperties": false
}`

const writeSchema = `{
  "type": "object",
  "properties": {` + pathProperty + `,
    "content": {"type": "string", "description": "The whole new content of the file, as text."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

const listSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The directory, relative to the workspace root; empty or . for the root.", "default": "."},
    "recursive": {"type": "boolean", "description": "Also list everything below subdirectories.", "default": false}
  },
  "additionalProperties": false
}`

type pathArgs struct {
	Path string `json:"path"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type listArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

func (k *kit) readTool() (flow.Tool, error) {
	desc := fmt.Sprintf("Read a text file in the sandbox workspace. At most %d bytes are returned; a binary file is described, not shown.", k.opts.MaxReadBytes)
	return flow.NewSchemaTool(ReadWorkspaceFile, desc, json.RawMessage(readSchema), k.read, flow.WithParallelSafe())
}

func (k *kit) writeTool() (flow.Tool, error) {
	return flow.NewSchemaTool(WriteWorkspaceFile,
		"Create or replace a text file in the sandbox workspace with the given content, creating missing parent directories.",
		json.RawMessage(writeSchema), k.write)
}

func (k *kit) listTool() (flow.Tool, error) {
	desc := fmt.Sprintf("List the files and directories under a directory of the sandbox workspace (directories end with /). At most %d entries are returned.", k.opts.MaxListEntries)
	return flow.NewSchemaTool(ListWorkspaceFiles, desc, json.RawMessage(listSchema), k.list, flow.WithParallelSafe())
}

func (k *kit) existsTool() (flow.Tool, error) {
	return flow.NewSchemaTool(WorkspacePathExists,
		"Tell whether a path exists in the sandbox workspace, and whether it is a file or a directory.",
		json.RawMessage(readSchema), k.exists, flow.WithParallelSafe())
}

func (k *kit) read(ctx context.Context, s *session.Session, raw json.RawMessage) (flow.ToolResult, error) {
	var args pathArgs
	if err := decodeArgs(raw, &args); err != nil {
		return flow.ToolResult{}, err
	}
	sb, res, err := k.open(ctx, s, ReadWorkspaceFile)
	if err != nil {
		return res, err
	}
	data, err := sb.ReadFile(ctx, args.Path)
	if err != nil {
		return res, fileError("read", args.Path, err)
	}
	if sandbox.IsBinary(data) {
		res.Content = fmt.Sprintf("%s is a binary file of %d bytes; its content is not shown.", args.Path, len(data))
		return res, nil
	}
	res.Content = text(data)
	if len(data) > k.opts.MaxReadBytes {
		res.Content = cut(res.Content, k.opts.MaxReadBytes) +
			fmt.Sprintf("\n[truncated: showing the first %d of %d bytes; use run_shell_command with sed -n, head or tail to see the rest]", k.opts.MaxReadBytes, len(data))
	}
	return res, nil
}

// write records the file's content before and after: the old content is
// read first, and kept as a blob when its hash matches what WriteFile
// reports it replaced (a file changed in between, or one too large to
// read, keeps only its hash).
func (k *kit) write(ctx context.Context, s *session.Session, raw json.RawMessage) (flow.ToolResult, error) {
	var args writeArgs
	if err := decodeArgs(raw, &args); err != nil {
		return flow.ToolResult{}, err
	}
	sb, res, err := k.open(ctx, s, WriteWorkspaceFile)
	if err != nil {
		return res, err
	}
	old, err := sb.ReadFile(ctx, args.Path)
	switch {
	case err == nil, errors.Is(err, sandbox.ErrNotFound), errors.Is(err, sandbox.ErrTooLarge):
	default:
		// An escape, a directory, a FIFO: refuse before touching anything.
		return res, fileError("write", args.Path, err)
	}
	data := []byte(args.Content)
	change, err := sb.WriteFile(ctx, args.Path, data)
	if err != nil {
		return res, fileError("write", args.Path, err)
	}
	res.Files = []events.FileChange{{Path: change.Path, Before: change.Before, After: change.After}}
	haveOld := change.Before != "" && sandbox.Hash(old) == change.Before
	if haveOld {
		res.Blobs = append(res.Blobs, old)
	}
	if change.Changed() {
		res.Blobs = append(res.Blobs, data)
	}
	switch {
	case change.Before == "":
		res.Content = fmt.Sprintf("created %s (%d bytes)", args.Path, len(data))
	case !change.Changed():
		res.Content = fmt.Sprintf("%s already had this content (%d bytes); nothing changed", args.Path, len(data))
	case haveOld:
		res.Content = fmt.Sprintf("replaced %s (%d bytes, was %d)", args.Path, len(data), len(old))
	default:
		res.Content = fmt.Sprintf("replaced %s (%d bytes)", args.Path, len(data))
	}
	return res, nil
}

func (k *kit) list(ctx context.Context, s *session.Session, raw json.RawMessage) (flow.ToolResult, error) {
	var args listArgs
	if err := decodeArgs(raw, &args); err != nil {
		return flow.ToolResult{}, err
	}
	sb, res, err := k.open(ctx, s, ListWorkspaceFiles)
	if err != nil {
		return res, err
	}
	entries, err := sb.List(ctx, args.Path, args.Recursive)
	if err != nil {
		return res, fileError("list", args.Path, err)
	}
	if len(entries) == 0 {
		res.Content = "(empty directory)"
		return res, nil
	}
	var b strings.Builder
	for i, e := range entries {
		if i == k.opts.MaxListEntries {
			fmt.Fprintf(&b, "[truncated: showing %d of %d entries; list a subdirectory to see more]\n", i, len(entries))
			break
		}
		b.WriteString(describe(e))
		b.WriteByte('\n')
	}
	res.Content = strings.TrimSuffix(b.String(), "\n")
	return res, nil
}

// describe is one listing line: directories end with a slash, files show
// their size, anything else says what it is.
func describe(e sandbox.FileInfo) string {
	switch {
	case e.IsDir():
		return e.Path + "/"
	case e.Mode.IsRegular():
		return fmt.Sprintf("%s (%d bytes)", e.Path, e.Size)
	default:
		return fmt.Sprintf("%s (%s)", e.Path, kindOf(e))
	}
}

func kindOf(e sandbox.FileInfo) string {
	if e.Mode&fs.ModeSymlink != 0 {
		return "symlink"
	}
	return "special file"
}

func (k *kit) exists(ctx context.Context, s *session.Session, raw json.RawMessage) (flow.ToolResult, error) {
	var args pathArgs
	if err := decodeArgs(raw, &args); err != nil {
		return flow.ToolResult{}, err
	}
	sb, res, err := k.open(ctx, s, WorkspacePathExists)
	if err != nil {
		return res, err
	}
	info, err := sb.Stat(ctx, args.Path)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		res.Content = fmt.Sprintf("false: %s does not exist", args.Path)
	case err != nil:
		return res, fileError("stat", args.Path, err)
	case info.IsDir():
		res.Content = fmt.Sprintf("true: %s is a directory", args.Path)
	case info.Mode.IsRegular():
		res.Content = fmt.Sprintf("true: %s is a file of %d bytes", args.Path, info.Size)
	default:
		res.Content = fmt.Sprintf("true: %s exists (%s)", args.Path, kindOf(info))
	}
	return res, nil
}
