package builtin

import (
	"fmt"
	"time"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/sandbox"
)

// The tool names, as the model sees them.
const (
	RunShellCommand     = "run_shell_command"
	ReadWorkspaceFile   = "read_workspace_file"
	WriteWorkspaceFile  = "write_workspace_file"
	ListWorkspaceFiles  = "list_workspace_files"
	WorkspacePathExists = "workspace_path_exists"
	RunCode             = "run_code"
)

// Defaults for Options and Tracking; a zero field takes these.
const (
	// DefaultMaxCodeTimeout is the longest timeout run_code accepts.
	DefaultMaxCodeTimeout = 10 * time.Minute
	// DefaultMaxReadBytes is how much of a text file read_workspace_file
	// shows the model; the same as a command's output cap.
	DefaultMaxReadBytes = sandbox.DefaultMaxOutput
	// DefaultMaxListEntries is how many entries list_workspace_files shows.
	DefaultMaxListEntries = 1000
	// DefaultTrackMaxFiles is the most regular files a workspace may hold
	// for commands' file changes to be tracked.
	DefaultTrackMaxFiles = 2000
	// DefaultTrackMaxFileBytes is the largest file whose changes are
	// tracked.
	DefaultTrackMaxFileBytes = 1 << 20
	// DefaultTrackMaxBytes bounds the total size of the tracked files (it
	// is also the memory one snapshot may hold).
	DefaultTrackMaxBytes = 32 << 20
)

// trackingGrace is added to a command's timeout to get the tool's timeout
// in the agent loop, so the sandbox's own timeout fires first (killing the
// process tree and keeping the partial output) and the snapshot after the
// command still has time to run.
const trackingGrace = time.Minute

// Options tune the tools. The zero value is ready to use.
type Options struct {
	// CommandTimeout bounds run_shell_command, and run_code called without
	// a timeout. It is passed to every Exec, so it replaces the backend's
	// own default. Zero means sandbox.DefaultTimeout.
	CommandTimeout time.Duration
	// MaxCodeTimeout is the largest timeout run_code accepts. Zero means
	// DefaultMaxCodeTimeout.
	MaxCodeTimeout time.Duration
	// MaxReadBytes is how many bytes of a text file read_workspace_file
	// returns; the rest is replaced by a mark. Zero means
	// DefaultMaxReadBytes.
	MaxReadBytes int
	// MaxListEntries is how many entries list_workspace_files returns.
	// Zero means DefaultMaxListEntries.
	MaxListEntries int
	// Tracking bounds the detection of files changed by commands.
	Tracking Tracking
}

// Tracking bounds the file-change tracking of run_shell_command and
// run_code (see the package documentation for what is not tracked).
//
// Each command lists the workspace and reads every tracked file twice,
// before and after: on the local backend that adds about 3 ms per command
// for 100 files of 1 KiB and 27 ms for 1000 (BenchmarkShell). On a remote
// backend (opensandbox) every read is a request: lower MaxFiles, or set
// Off, for large workspaces there.
type Tracking struct {
	// Off disables tracking: commands report no file changes.
	Off bool
	// MaxFiles: a workspace with more regular files than this (outside
	// .git) is not tracked. Zero means DefaultTrackMaxFiles.
	MaxFiles int
	// MaxFileBytes: a file larger than this is not tracked. Zero means
	// DefaultTrackMaxFileBytes.
	MaxFileBytes int64
	// MaxBytes: a workspace whose trackable files add up to more than this
	// is not tracked. Zero means DefaultTrackMaxBytes.
	MaxBytes int64
}

func (o Options) withDefaults() Options {
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = sandbox.DefaultTimeout
	}
	if o.MaxCodeTimeout <= 0 {
		o.MaxCodeTimeout = DefaultMaxCodeTimeout
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxListEntries <= 0 {
		o.MaxListEntries = DefaultMaxListEntries
	}
	if o.Tracking.MaxFiles <= 0 {
		o.Tracking.MaxFiles = DefaultTrackMaxFiles
	}
	if o.Tracking.MaxFileBytes <= 0 {
		o.Tracking.MaxFileBytes = DefaultTrackMaxFileBytes
	}
	if o.Tracking.MaxBytes <= 0 {
		o.Tracking.MaxBytes = DefaultTrackMaxBytes
	}
	return o
}

// Names returns the built-in tool names in their documented order.
func Names() []string {
	return []string{RunShellCommand, ReadWorkspaceFile, WriteWorkspaceFile, ListWorkspaceFiles, WorkspacePathExists, RunCode}
}

// New returns the built-in tools named (all of them, in Names order, when
// none is named) acting on the sandboxes of pool, with default Options.
//
// Errors: ErrNoPool, an *UnknownNameError (matching ErrUnknownName) that
// lists the valid names, or a duplicate name.
func New(pool *sandbox.Pool, names ...string) ([]flow.Tool, error) {
	return NewWith(pool, Options{}, names...)
}

// NewWith is New with options.
func NewWith(pool *sandbox.Pool, opts Options, names ...string) ([]flow.Tool, error) {
	if pool == nil {
		return nil, ErrNoPool
	}
	if len(names) == 0 {
		names = Names()
	}
	k := &kit{pool: pool, opts: opts.withDefaults()}
	seen := make(map[string]bool, len(names))
	tools := make([]flow.Tool, 0, len(names))
	for _, name := range names {
		if seen[name] {
			return nil, fmt.Errorf("builtin: tool %q named twice", name)
		}
		seen[name] = true
		t, err := k.tool(name)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// kit is what every tool shares: the pool and the options.
type kit struct {
	pool *sandbox.Pool
	opts Options
}

func (k *kit) tool(name string) (flow.Tool, error) {
	var (
		t   flow.Tool
		err error
	)
	switch name {
	case RunShellCommand:
		t, err = k.shellTool()
	case ReadWorkspaceFile:
		t, err = k.readTool()
	case WriteWorkspaceFile:
		t, err = k.writeTool()
	case ListWorkspaceFiles:
		t, err = k.listTool()
	case WorkspacePathExists:
		t, err = k.existsTool()
	case RunCode:
		t, err = k.codeTool()
	default:
		return nil, &UnknownNameError{Name: name, Valid: Names()}
	}
	if err != nil {
		// The schemas are constants of this package: failing here is a bug.
		return nil, fmt.Errorf("builtin: %s: %w", name, err)
	}
	return t, nil
}
