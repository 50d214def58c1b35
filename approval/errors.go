package approval

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrUnknown is matched by an *UnknownError.
	ErrUnknown = errors.New("approval: no such request")
	// ErrDecided is matched by a *DecidedError.
	ErrDecided = errors.New("approval: already decided")
	// ErrExpired is matched by an *ExpiredError.
	ErrExpired = errors.New("approval: the deadline passed")
	// ErrInvalid is matched by an *InvalidError.
	ErrInvalid = errors.New("approval: invalid decision")
)

// UnknownError is a request id the log does not hold.
type UnknownError struct{ ID string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("approval: no request %q (rath approvals lists the pending ones)", e.ID)
}

// Is makes errors.Is(err, ErrUnknown) true.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// DecidedError is a decision on a request someone decided already.
type DecidedError struct{ ID, Decision, By string }

func (e *DecidedError) Error() string {
	if e.By == "" {
		return fmt.Sprintf("approval: %s was decided already", e.ID)
	}
	return fmt.Sprintf("approval: %s was decided already: %s by %s", e.ID, e.Decision, e.By)
}

// Is makes errors.Is(err, ErrDecided) true.
func (e *DecidedError) Is(target error) bool { return target == ErrDecided }

// ExpiredError is a decision on a pending request past its deadline: its
// default decision applies when the run continues.
type ExpiredError struct {
	ID       string
	Deadline time.Time
	Default  string
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("approval: %s expired at %s; its default (%s) applies", e.ID, e.Deadline.UTC().Format(time.RFC3339), e.Default)
}

// Is makes errors.Is(err, ErrExpired) true.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired }

// InvalidError is a decision that does not fit its request.
type InvalidError struct{ ID, Reason string }

func (e *InvalidError) Error() string { return fmt.Sprintf("approval: %s: %s", e.ID, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }
