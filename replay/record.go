package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// runInfo is what the record says about a run.
type runInfo struct {
	run      string
	started  events.RunStarted
	startSeq int64
	finished *events.RunFinished
	events   []events.Event
	// total is how many events the record holds; memoryStreams the
	// memory namespace streams the run wrote to, whose earlier history a
	// replay needs (memory ids derive from stream versions).
	total         int
	memoryStreams []string
	// redacted are the run's redacted events (their payloads deleted):
	// the record ends before the first.
	redacted []int64
	// startRecord is what the run wrote with its run.started
	// (rath.WithStartRecord): a counterfactual's counterfactual.forked,
	// which a replay writes again. Nil for other runs.
	startRecord events.Payload
	// pending, when set, reads the rest of the record (events, finished):
	// an outlined record is read in the background. See complete.
	pending func() ([]events.Event, error)
}

// loadRun reads a run's whole record.
func loadRun(ctx context.Context, rt *rath.Runtime, runID string) (*runInfo, error) {
	evs, err := rt.Store().ReadRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	info := &runInfo{run: runID}
	if err := info.fill(runID, evs); err != nil {
		return nil, err
	}
	if info.startSeq == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, runID)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		if isMemoryStream(ev.Stream) && !seen[ev.Stream] {
			seen[ev.Stream] = true
			info.memoryStreams = append(info.memoryStreams, ev.Stream)
		}
	}
	info.total = len(evs)
	return info, nil
}

// outlineRun reads what a replay needs before it starts: the run's
// run.started, how many events its record holds up to the log's head now,
// and the memory streams they touch. The record itself (up to the seq it
// returns) is for the caller to read, while the replay runs; set pending
// to complete it.
func outlineRun(ctx context.Context, rt *rath.Runtime, runID string) (*runInfo, int64, error) {
	store := rt.Store()
	head, err := store.Head(ctx)
	if err != nil {
		return nil, 0, err
	}
	// A run's stream begins with its run.started.
	first, err := store.ReadStreamUntil(ctx, runID, 1, head.Seq, 1)
	if err != nil {
		return nil, 0, err
	}
	info := &runInfo{run: runID}
	if len(first) == 1 {
		if err := info.fill(runID, first); err != nil {
			return nil, 0, err
		}
	}
	if info.startSeq == 0 {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, runID)
	}
	toSeq := head.Seq
	if info.redacted, err = store.RedactedInRun(ctx, runID, head.Seq); err != nil {
		return nil, 0, err
	}
	if len(info.redacted) > 0 {
		// The record a replay can check ends before its first redacted
		// event: from there on it has no answers to give (see Report.Redacted).
		toSeq = info.redacted[0] - 1
	}
	outline, err := store.OutlineRun(ctx, runID, toSeq)
	if err != nil {
		return nil, 0, err
	}
	info.total = outline.Events
	for _, stream := range outline.Streams {
		if isMemoryStream(stream) {
			info.memoryStreams = append(info.memoryStreams, stream)
		}
	}
	return info, toSeq, nil
}

// fill takes the record's events and what its run stream says.
func (info *runInfo) fill(runID string, evs []events.Event) error {
	info.events = evs
	for _, ev := range evs {
		if ev.Stream != runID || (ev.Type != events.TypeRunStarted && ev.Type != events.TypeRunFinished) {
			continue
		}
		p, err := ev.Decode()
		if err != nil {
			return err
		}
		switch e := p.(type) {
		case *events.RunStarted:
			info.started, info.startSeq = *e, ev.Seq
		case *events.RunFinished:
			info.finished = e
		}
	}
	return nil
}

// complete waits for the rest of an outlined record (a no-op for one read
// whole) and fills events and finished from it.
func (info *runInfo) complete() error {
	if info.pending == nil {
		return nil
	}
	evs, err := info.pending()
	info.pending = nil
	if err != nil {
		return fmt.Errorf("replay: read the record: %w", err)
	}
	started, startSeq := info.started, info.startSeq
	if err := info.fill(info.run, evs); err != nil {
		return fmt.Errorf("replay: read the record: %w", err)
	}
	if info.startSeq != startSeq || info.started.Run != started.Run {
		return fmt.Errorf("replay: read the record: run.started at seq %d, outlined at %d", info.startSeq, startSeq)
	}
	return nil
}

// readStartRecord fills info.startRecord: for a counterfactual run, the
// counterfactual.forked event on its stream (none for one recorded before
// the event existed).
func (info *runInfo) readStartRecord(ctx context.Context, rt *rath.Runtime) error {
	if info.started.Params[CounterfactualOfParam] == "" {
		return nil
	}
	evs, err := rt.Store().ReadStream(ctx, events.CounterfactualStream(info.run), 0)
	if err != nil || len(evs) == 0 {
		return err
	}
	info.startRecord, err = evs[0].Decode()
	return err
}

func isMemoryStream(stream string) bool { return strings.HasPrefix(stream, events.MemoryStream("")) }
