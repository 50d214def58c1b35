package eval

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is matched by errors for a dataset, an experiment or a
	// run that the log does not hold.
	ErrNotFound = errors.New("eval: not found")
	// ErrExists is matched when a dataset or an experiment of that name
	// already exists.
	ErrExists = errors.New("eval: already exists")
	// ErrSpec is matched by errors for a scorer spec, a judge file or a
	// JSONL case that cannot be used.
	ErrSpec = errors.New("eval: bad input")
	// ErrScoreFell is matched by a *ScoreFellError.
	ErrScoreFell = errors.New("eval: a score fell below the baseline's")
	// ErrScoreMismatch is matched by a *ScoreMismatchError.
	ErrScoreMismatch = errors.New("eval: a score does not match the events it read")
)

// ScoreMismatchError says that the score (or dataset item) at ScoreSeq read the event at
// EventSeq when its leaf hash was Recorded, and the log's event there now
// hashes to Actual (empty when the event is gone or unreadable, Reason
// says why).
type ScoreMismatchError struct {
	What               string // "score", "dataset item" or "counterfactual"
	ScoreSeq, EventSeq int64
	Recorded, Actual   string
	Reason             string
}

func (e *ScoreMismatchError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s at seq %d read seq %d: %s", e.What, e.ScoreSeq, e.EventSeq, e.Reason)
	}
	return fmt.Sprintf("%s at seq %d read seq %d with leaf %s, the log's event at seq %d now hashes to %s", e.What, e.ScoreSeq, e.EventSeq, short(e.Recorded), e.EventSeq, short(e.Actual))
}

// Is makes errors.Is(err, ErrScoreMismatch) true.
func (e *ScoreMismatchError) Is(target error) bool { return target == ErrScoreMismatch }

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

func specErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSpec, fmt.Sprintf(format, args...))
}
