package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

var (
	// ErrPathEscape is returned by file operations, and by Exec for its Dir,
	// when a path would leave the workspace: through "..", an absolute path
	// outside [Sandbox.Workdir], or a symlink pointing outside. The error is
	// an *fs.PathError naming the operation and the path.
	ErrPathEscape = errors.New("sandbox: path escapes the workspace")
	// ErrInvalidPath is returned for a path that cannot name a file, such as
	// one containing a NUL byte.
	ErrInvalidPath = errors.New("sandbox: invalid path")
	// ErrNotFound is returned when a file or directory does not exist. It
	// wraps fs.ErrNotExist, so errors.Is(err, fs.ErrNotExist) also holds.
	ErrNotFound = fmt.Errorf("sandbox: not found: %w", fs.ErrNotExist)
	// ErrIsDir is returned by ReadFile, WriteFile and Remove on a directory.
	ErrIsDir = errors.New("sandbox: is a directory")
	// ErrNotDir is returned by List, and by Exec for its Dir, on a path that
	// is not a directory.
	ErrNotDir = errors.New("sandbox: not a directory")
	// ErrNotRegular is returned by ReadFile and WriteFile on a file that is
	// neither a regular file nor a directory (a FIFO, a socket, a device):
	// opening one could block forever or read without end.
	ErrNotRegular = errors.New("sandbox: not a regular file")
	// ErrTooLarge is returned by ReadFile when the file is larger than the
	// backend's read limit.
	ErrTooLarge = errors.New("sandbox: file too large")
	// ErrTimeout is returned by Exec when the command ran past its timeout
	// and was killed. The partial [ExecResult] is returned with it.
	ErrTimeout = errors.New("sandbox: command timed out")
	// ErrClosed is returned by calls on a closed Sandbox or Pool.
	ErrClosed = errors.New("sandbox: closed")
	// ErrUnknownBackend is matched by an *UnknownBackendError.
	ErrUnknownBackend = errors.New("sandbox: unknown backend")
	// ErrUnavailable is returned by Backend.Open when the backend cannot run
	// on this machine: a missing binary, disabled user namespaces, an
	// unreachable server. The message says what is missing.
	ErrUnavailable = errors.New("sandbox: backend unavailable")
	// ErrInvalidSpec is returned by Backend.Open for a spec it cannot use.
	ErrInvalidSpec = errors.New("sandbox: invalid spec")
	// ErrNoPlacement is returned by Pool.Get for a placement without a
	// backend name.
	ErrNoPlacement = errors.New("sandbox: no placement")
	// ErrUnsupported is returned for a request field the backend cannot
	// honour (for example stdin on a backend whose Capabilities say
	// Stdin: false). It wraps errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("sandbox: unsupported: %w", errors.ErrUnsupported)
)

// UnknownBackendError reports a lookup of a backend name that is not
// registered. Known lists the registered names, sorted. It matches
// [ErrUnknownBackend] with errors.Is.
type UnknownBackendError struct {
	Name  string
	Known []string
}

func (e *UnknownBackendError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("sandbox: unknown backend %q (registered: %s)", e.Name, known)
}

// Is makes errors.Is(err, ErrUnknownBackend) true.
func (e *UnknownBackendError) Is(target error) bool { return target == ErrUnknownBackend }

// PathErr returns the error file operations use for a path failure: an
// *fs.PathError carrying op, the caller's path and err (usually one of the
// sentinels above). Backends use it so every backend reports paths alike.
func PathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}
