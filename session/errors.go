package session

import (
	"errors"
	"fmt"
)

var (
	// ErrStale is matched by a *StaleError.
	ErrStale = errors.New("session: stale handle")
	// ErrNotFound is returned for an unknown session, or one that did not
	// exist yet at the requested seq.
	ErrNotFound = errors.New("session: not found")
	// ErrInvalid is returned for invalid arguments (a bad role, a merge of
	// nothing, handles from another runtime).
	ErrInvalid = errors.New("session: invalid")
)

// StaleError reports a write through a handle that is not the head of its
// session: Have is the handle's version, Head the stored one. Fork the
// handle to branch from it, or load the head with Manager.Load.
type StaleError struct {
	ID   string
	Have int64
	Head int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("session: stale handle for %s: handle is at version %d, session is at version %d (fork it to branch, or load the head)", e.ID, e.Have, e.Head)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
