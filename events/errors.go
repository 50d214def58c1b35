package events

import (
	"errors"
	"fmt"
)

var (
	// ErrConflict is matched by a *ConflictError: the stream was not at the
	// expected version.
	ErrConflict = errors.New("events: version conflict")
	// ErrClosed is returned by calls on a closed Store.
	ErrClosed = errors.New("events: store closed")
	// ErrUnknownType is returned by Decode for an event type that is not in
	// the catalogue.
	ErrUnknownType = errors.New("events: unknown event type")
	// ErrInvalid is matched by errors for payloads that fail validation.
	ErrInvalid = errors.New("events: invalid event")
	// ErrBlobNotFound is returned when a referenced blob is missing.
	ErrBlobNotFound = errors.New("events: blob not found")
	// ErrNotFound is returned when no event has the requested seq.
	ErrNotFound = errors.New("events: not found")
)

// ConflictError reports an append whose expected stream version did not
// match the stream's head. It matches ErrConflict with errors.Is.
type ConflictError struct {
	Stream   string
	Expected int64
	Actual   int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("events: version conflict on stream %q: expected version %d, stream is at %d", e.Stream, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DecodeError reports a payload that could not be decoded into its struct.
type DecodeError struct {
	Seq  int64 // 0 when the event has not been stored
	Type string
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("events: decode %s at seq %d: %v", e.Type, e.Seq, e.Err)
	}
	return fmt.Sprintf("events: decode %s: %v", e.Type, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// invalid returns an error wrapping ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
