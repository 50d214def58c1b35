package jsonl

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is matched by a *ParseError: the input is not a valid
	// session file.
	ErrMalformed = errors.New("jsonl: malformed session file")
	// ErrExists is matched by an *ExistsError: the session is already in
	// the store.
	ErrExists = errors.New("jsonl: session already exists")
	// ErrLineTooLong is matched by the *ParseError of a line over
	// Options.MaxLineBytes (its File and Line say where).
	ErrLineTooLong = errors.New("jsonl: line too long")
)

// ParseError reports malformed input. Line is 1-based; 0 means the problem
// concerns the file as a whole (for example, it has no header). Nothing of
// a file that fails to parse is imported.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("jsonl: %s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("jsonl: %s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrMalformed) true.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// ExistsError reports a file whose session id is already in the store. The
// file was skipped; importing it again would duplicate the session.
type ExistsError struct {
	File    string
	Session string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("jsonl: %s: session %s is already in the store (not imported twice)", e.File, e.Session)
}

// Is makes errors.Is(err, ErrExists) true.
func (e *ExistsError) Is(target error) bool { return target == ErrExists }
