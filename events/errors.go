package events

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownType is returned by Decode for an event type that is not in
	// the catalogue.
	ErrUnknownType = errors.New("events: unknown event type")
	// ErrInvalid is matched by errors for payloads that fail validation.
	ErrInvalid = errors.New("events: invalid event")
)

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
