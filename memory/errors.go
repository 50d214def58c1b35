package memory

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is matched by errors for invalid arguments: an empty
	// namespace, text or query, a nil session.
	ErrInvalid = errors.New("memory: invalid argument")
	// ErrNotFound is returned by Forget for an id that is not a live memory
	// of the namespace (unknown, or already forgotten).
	ErrNotFound = errors.New("memory: not found")
	// ErrClosed is returned by calls on a closed Local.
	ErrClosed = errors.New("memory: closed")
	// ErrLocked is returned by OpenLocal when another process holds the
	// index open. The index is left as it is; it is not rebuilt.
	ErrLocked = errors.New("memory: index in use by another process")
	// ErrNotIndex is returned by OpenLocal when the directory exists and
	// holds files that are not a memory index. Local never deletes them.
	ErrNotIndex = errors.New("memory: directory is not a memory index")
	// ErrContention is returned when a write to a namespace kept losing the
	// optimistic-concurrency race against other writers.
	ErrContention = errors.New("memory: too much write contention on namespace")
)

// IndexError reports that the index could not be brought up to date with
// the log (Op says which step failed). Recall returns it while the
// background indexer keeps failing; it unwraps to the cause.
type IndexError struct {
	Op  string
	Err error
}

func (e *IndexError) Error() string { return fmt.Sprintf("memory: index %s: %v", e.Op, e.Err) }

func (e *IndexError) Unwrap() error { return e.Err }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
