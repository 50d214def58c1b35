package sandbox

import (
	"context"
	"io/fs"
	"time"
)

// Defaults shared by the built-in backends. A backend field left at zero
// takes these values.
const (
	// DefaultTimeout bounds one Exec call when neither the request nor the
	// backend sets a timeout.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxOutput is how many bytes of stdout, and separately of
	// stderr, an Exec call keeps. The rest is counted and discarded.
	DefaultMaxOutput = 64 << 10
	// DefaultMaxReadBytes is the largest file ReadFile returns.
	DefaultMaxReadBytes = 16 << 20
)

// Backend opens sandboxes of one kind. Implementations must be safe for
// concurrent use; Open may be called many times with different specs.
type Backend interface {
	// Name is the name a placement uses to select the backend ("local",
	// "bwrap", "opensandbox"). It must be constant.
	Name() string
	// Capabilities says which optional behaviours the backend's sandboxes
	// have. It must be constant.
	Capabilities() Capabilities
	// Open opens a sandbox for spec, whose meaning is the backend's (a
	// workspace directory, an image name). ctx bounds the opening only,
	// not the life of the sandbox, which lasts until Close.
	//
	// Errors match ErrInvalidSpec for a spec the backend cannot use and
	// ErrUnavailable when the backend cannot run on this machine.
	Open(ctx context.Context, spec string) (Sandbox, error)
}

// Capabilities describes what a backend's sandboxes can do, so callers and
// the conformance suite (sandbox/sandboxtest) know what to rely on.
type Capabilities struct {
	// Stdin: Exec feeds ExecRequest.Stdin to the command. Without it, a
	// request with stdin fails with ErrUnsupported.
	Stdin bool
	// ExactOutput: stdout and stderr are returned byte for byte. Backends
	// that receive output as a stream of lines (OpenSandbox) rebuild it and
	// may add a final newline the command did not print.
	ExactOutput bool
	// ConfinedSymlinks: file operations resolve symlinks themselves and
	// refuse any that lead outside the workspace with ErrPathEscape. Without
	// it, symlinks are followed by a remote server inside its own container.
	ConfinedSymlinks bool
	// Isolated: commands cannot see the host's processes and cannot write
	// outside the workspace (apart from a private /tmp).
	Isolated bool
	// Network: commands can open network connections.
	Network bool
}

// Sandbox is one opened workspace with a command runner. All methods are
// safe for concurrent use: concurrent Exec calls run concurrently and each
// returns its own result.
//
// Paths are relative to the workspace and use forward slashes; "" and "."
// name the workspace itself. An absolute path is accepted when it lies under
// Workdir; see [CleanPath]. Any path that leaves the workspace fails with
// ErrPathEscape; errors for a path are *fs.PathError values.
type Sandbox interface {
	// ID identifies the sandbox for evidence: stable for the sandbox's life
	// and unique among the sandboxes open at the same time.
	ID() string
	// Workdir is the absolute path commands see as their working directory
	// and as HOME.
	Workdir() string
	// Exec runs req.Command with sh -c in the workspace. A non-zero exit
	// status is not an error: it is ExecResult.ExitCode. On timeout the
	// command's whole process tree is killed and Exec returns the partial
	// result with an error matching ErrTimeout; when ctx ends first it
	// returns the partial result with an error matching ctx's error.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// ReadFile returns the content of a regular file. It fails with
	// ErrNotFound, ErrIsDir, ErrNotRegular, ErrTooLarge or ErrPathEscape.
	// Binary content is returned as is; see [IsBinary].
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile creates or truncates a regular file, creating missing parent
	// directories, and reports the content hashes before and after.
	WriteFile(ctx context.Context, path string, data []byte) (FileChange, error)
	// List returns the entries under a directory, sorted by path, without
	// the directory itself; recursive descends into subdirectories (but not
	// through symlinks). It fails with ErrNotFound or ErrNotDir.
	List(ctx context.Context, path string, recursive bool) ([]FileInfo, error)
	// Stat describes one path, following symlinks inside the workspace. It
	// fails with ErrNotFound or ErrPathEscape.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// Close releases the sandbox: running commands are killed, remote
	// sandboxes deleted. It finishes its cleanup without a context. Later
	// calls fail with ErrClosed; a second Close returns nil.
	Close() error
}

// Remover is implemented by sandboxes that can delete files. All built-in
// backends do; a read-only backend would not.
type Remover interface {
	// Remove deletes one file (or symlink) and reports the content hash it
	// had. It fails with ErrNotFound, ErrIsDir or ErrPathEscape.
	Remove(ctx context.Context, path string) (FileChange, error)
}

// Walker is implemented by sandboxes that can go through a directory tree
// one entry at a time, so a caller that needs only part of it (change
// tracking stops at its file cap) neither waits for nor holds the whole
// listing. The host backends implement it; a remote one may not.
type Walker interface {
	// Walk calls fn for each entry under path, recursively, without the
	// directory itself and without following symlinks, in no particular
	// order. fn returning fs.SkipDir for a directory skips its contents;
	// fs.SkipAll stops the walk, and Walk returns nil; any other error
	// stops it and is returned. Walk fails with ErrNotFound or ErrNotDir
	// for path as List does.
	Walk(ctx context.Context, path string, fn func(FileInfo) error) error
}

// ExecRequest is one command to run. Zero fields take the backend's
// defaults.
type ExecRequest struct {
	// Command is run as sh -c Command. Required.
	Command string
	// Dir is the working directory, relative to the workspace like any other
	// path. Empty means the workspace itself.
	Dir string
	// Timeout bounds the command. Zero means the backend's default
	// (DefaultTimeout unless configured).
	Timeout time.Duration
	// Env adds variables to the command's small default environment. The
	// host's environment is never passed wholesale.
	Env map[string]string
	// Stdin is fed to the command; nil means an empty stdin. Needs
	// Capabilities.Stdin.
	Stdin []byte
	// MaxStdout and MaxStderr cap the bytes kept of each stream. Zero means
	// the backend's default (DefaultMaxOutput unless configured).
	MaxStdout, MaxStderr int
}

// ExecResult is what a command did.
type ExecResult struct {
	// ExitCode is the exit status, or -1 when the command was killed by a
	// signal (which includes a timeout) or the status is unknown.
	ExitCode int
	// Stdout and Stderr are the first bytes of each stream, up to the cap.
	Stdout, Stderr []byte
	// StdoutTruncated and StderrTruncated mark a stream that produced more
	// than its cap; the excess was counted, not kept.
	StdoutTruncated, StderrTruncated bool
	// StdoutBytes and StderrBytes count every byte the stream produced,
	// kept or not.
	StdoutBytes, StderrBytes int64
	// Duration is the wall-clock time from start to exit.
	Duration time.Duration
	// TimedOut is true when the command was killed at its timeout.
	TimedOut bool
}

// FileInfo describes one file in a workspace.
type FileInfo struct {
	// Path is relative to the workspace, slash-separated; "." for the
	// workspace itself.
	Path string
	// Size in bytes (for a symlink, the length of its target).
	Size int64
	// Mode holds the type bits (fs.ModeDir, fs.ModeSymlink, ...) and the
	// permission bits.
	Mode fs.FileMode
	// ModTime is the last modification time as the backend reports it.
	ModTime time.Time
}

// IsDir reports whether the entry is a directory.
func (f FileInfo) IsDir() bool { return f.Mode.IsDir() }

// FileChange is the evidence of a write or a removal: the path and the
// content hash before and after, as hex SHA-256 (the form of
// eventlog.BlobHash), empty when the file was absent.
type FileChange struct {
	Path   string
	Before string
	After  string
}

// Changed reports whether the content differs before and after.
func (c FileChange) Changed() bool { return c.Before != c.After }
