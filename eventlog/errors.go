package eventlog

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gorath/rath/events"
)

var (
	// ErrConflict is matched by a *ConflictError: the stream was not at the
	// expected version.
	ErrConflict = errors.New("eventlog: version conflict")
	// ErrClosed is returned by calls on a closed Store.
	ErrClosed = errors.New("eventlog: store closed")
	// ErrBlobNotFound is returned when a referenced blob is missing.
	ErrBlobNotFound = errors.New("eventlog: blob not found")
	// ErrNotFound is returned when no event has the requested seq.
	ErrNotFound = errors.New("eventlog: not found")
	// ErrFewReadConns is returned by SeveralReads when the read pool has
	// fewer connections than the reader holds at once.
	ErrFewReadConns = errors.New("eventlog: too few read connections")
)

// ConflictError reports an append whose expected stream version did not
// match the stream's head. It matches ErrConflict with errors.Is.
type ConflictError struct {
	Stream   string
	Expected int64
	Actual   int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("eventlog: version conflict on stream %q: expected version %d, stream is at %d", e.Stream, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ErrKey is matched by a *KeyError: the store refuses to write because
// the key it was opened with (Options.HMACKey) is not the key its hash
// chain was written with.
var ErrKey = errors.New("eventlog: hash chain key mismatch")

// KeyError explains why a store refuses to write with the key it was
// given. It never holds the key. It matches ErrKey with errors.Is.
type KeyError struct {
	// Reason says which way the keys differ and what to do.
	Reason string
}

func (e *KeyError) Error() string {
	return "eventlog: refusing to write: " + e.Reason
}

// Is makes errors.Is(err, ErrKey) true.
func (e *KeyError) Is(target error) bool { return target == ErrKey }

var (
	// ErrBusy is matched by a *StorageError when another connection held
	// the database's write lock past the busy timeout. Nothing of the
	// failed write was stored; retrying later is safe.
	ErrBusy = errors.New("eventlog: database is busy (write lock held by another connection)")
	// ErrFull is matched by a *StorageError when the database's file
	// system is full. Nothing of the failed write was stored; appends
	// succeed again once space is freed.
	ErrFull = errors.New("eventlog: storage full")
)

// errGateTimeout is the cause of the ErrBusy a write fails with when no
// other process's writer let go of the write gate (writegate_unix.go)
// within the busy timeout.
var errGateTimeout = errors.New("no other writer released the write gate")

// StorageError is a write that SQLite refused for a reason outside rath:
// the file system is full (Kind ErrFull) or the write lock stayed taken
// (Kind ErrBusy). It matches its Kind with errors.Is and unwraps to the
// driver's error.
type StorageError struct {
	Op   string // what was being done: "begin", "insert", "commit", ...
	Kind error  // ErrBusy or ErrFull
	Err  error
}

func (e *StorageError) Error() string {
	return fmt.Sprintf("%v: %s: %v", e.Kind, e.Op, e.Err)
}

// Is makes errors.Is(err, e.Kind) true.
func (e *StorageError) Is(target error) bool { return target == e.Kind }

func (e *StorageError) Unwrap() error { return e.Err }

// SQLite's primary result codes (https://sqlite.org/rescode.html).
const (
	sqliteBusy       = 5
	sqliteLocked     = 6
	sqliteFull       = 13
	sqliteConstraint = 19
)

// sqliteCode returns the primary result code of a driver error, or 0.
func sqliteCode(err error) int {
	var se interface{ Code() int }
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// storageErr wraps err in a *StorageError when it is a full disk or a
// lock held too long, and otherwise wraps it with op for context.
func storageErr(op string, err error) error {
	if se := (*StorageError)(nil); errors.As(err, &se) {
		return err // classified where it arose (the write gate)
	}
	switch sqliteCode(err) {
	case sqliteBusy, sqliteLocked:
		return &StorageError{Op: op, Kind: ErrBusy, Err: err}
	case sqliteFull:
		return &StorageError{Op: op, Kind: ErrFull, Err: err}
	}
	switch pgCode(err) {
	case pgLockNotAvail, pgSerialization, pgDeadlock:
		return &StorageError{Op: op, Kind: ErrBusy, Err: err}
	case pgDiskFull, pgOutOfMemory:
		return &StorageError{Op: op, Kind: ErrFull, Err: err}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return &StorageError{Op: op, Kind: ErrFull, Err: err}
	}
	return fmt.Errorf("eventlog: %s: %w", op, err)
}

// IsTransient reports whether err is a store failure that passes by
// itself, so that the operation is worth trying again later: the write
// lock held past the busy timeout (ErrBusy), the PostgreSQL server
// unreachable (ErrUnreachable), or the connection to it lost (the server
// restarted or shut down, the session was ended, the network failed). A
// full disk (ErrFull) is not: it needs someone to free space.
func IsTransient(err error) bool {
	return errors.Is(err, ErrBusy) || errors.Is(err, ErrUnreachable) || connectionLost(err)
}

// invalid returns an error wrapping events.ErrInvalid: a request the log
// refuses as malformed, as the catalogue refuses a payload.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", events.ErrInvalid, fmt.Sprintf(format, args...))
}
