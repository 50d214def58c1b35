package eventlog

import (
	"context"
	"fmt"
)

// RunOutline says how large a run's record is without reading it: how
// many events it has and the streams they were written to.
type RunOutline struct {
	Events  int
	Streams []string // sorted
}

// OutlineRun outlines the events of a run with seq <= toSeq (0: the
// head). It reads the run's index entries and their streams, not the
// payloads, so a reader that streams the record can size itself and
// learn its streams first.
func (s *Store) OutlineRun(ctx context.Context, runID string, toSeq int64) (RunOutline, error) {
	where := ` FROM events WHERE run_id = ?`
	args := []any{runID}
	if toSeq > 0 {
		where += ` AND seq <= ?`
		args = append(args, toSeq)
	}
	var out RunOutline
	if err := s.q.GetContext(ctx, &out.Events, s.rebind(`SELECT COUNT(*)`+where), args...); err != nil {
		return RunOutline{}, fmt.Errorf("eventlog: outline run %s: %w", runID, err)
	}
	if out.Events == 0 {
		return out, nil
	}
	if err := s.q.SelectContext(ctx, &out.Streams, s.rebind(`SELECT DISTINCT stream`+where+` ORDER BY stream`), args...); err != nil {
		return RunOutline{}, fmt.Errorf("eventlog: outline run %s: %w", runID, err)
	}
	return out, nil
}
