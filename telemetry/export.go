package telemetry

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
)

// ErrRunNotFound is returned by ExportRuns for a run with no events.
var ErrRunNotFound = errors.New("telemetry: run not found")

// RunReader reads a run's events and blobs; *eventlog.Store is one.
type RunReader interface {
	BlobGetter
	ReadRun(ctx context.Context, runID string) ([]events.Event, error)
}

// ExportStats counts what ExportRuns sent.
type ExportStats struct {
	Runs       int // runs exported
	Spans      int // spans ended
	Incomplete int // runs with no run.finished (crashed or still running)
}

// ExportRuns emits the spans (and, if the pipeline has a meter provider,
// the metric points) of finished or crashed runs from the log, with their
// recorded times and derived ids, then flushes. Every run is read before
// anything is sent, so an unknown id exports nothing.
func ExportRuns(ctx context.Context, log RunReader, p *Pipeline, runIDs ...string) (ExportStats, error) {
	var st ExportStats
	if p == nil {
		return st, errors.New("telemetry: export: no pipeline")
	}
	runs := make([][]events.Event, len(runIDs))
	for i, id := range runIDs {
		evs, err := log.ReadRun(ctx, id)
		if err != nil {
			return st, fmt.Errorf("telemetry: read run %s: %w", id, err)
		}
		if len(evs) == 0 {
			return st, fmt.Errorf("%w: %q", ErrRunNotFound, id)
		}
		runs[i] = evs
	}
	t := p.translator(log)
	for i, evs := range runs {
		for _, ev := range evs {
			if err := t.handle(ctx, ev); err != nil {
				return st, fmt.Errorf("telemetry: run %s: %w", runIDs[i], err)
			}
		}
		if len(t.runs) > 0 {
			st.Incomplete++
			t.flush()
		}
		st.Runs++
	}
	st.Spans = t.spans
	return st, p.ForceFlush(ctx)
}
