package eventlog

import (
	"errors"
	"fmt"
)

// Lease is a worker's hold on a run. An append made in a [Scope] with a
// Lease is fenced when it writes the lease's run (events stamped with its
// run id, or on its lease stream): its transaction checks that the token
// is still the run's current one, and fails with a *FencedError if
// another worker took the run since.
type Lease struct {
	Run   string
	Token int64
}

// ErrFenced is matched by a *FencedError.
var ErrFenced = errors.New("eventlog: the run's lease is held by another worker")

// FencedError is an append refused because the worker's lease on the run
// is no longer current: another worker took the run (after this one was
// paused, partitioned or too slow to renew). Nothing of it was written.
type FencedError struct {
	Run     string
	Token   int64 // the token the append was made under
	Current int64 // the run's current token
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("eventlog: run %s: lease token %d is no longer current (now %d): another worker holds the run", e.Run, e.Token, e.Current)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }
