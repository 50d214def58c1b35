package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// ErasedEvent is a recorded answer of a run that a replay cannot check
// because its subject was erased (rath erase): a model's answer
// (provider.called or provider.failed) or a tool's result (tool.returned).
type ErasedEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
}

// answerTypes are the recorded answers a replay answers the run from.
var answerTypes = map[string]bool{events.TypeProviderCalled: true, events.TypeProviderFailed: true, events.TypeToolReturned: true}

// isErased reports whether a read event's content was sealed under a key
// that was erased since.
func isErased(ev events.Event) bool {
	return ev.Redacted && string(ev.Payload) == events.ErasedMarker
}

// ErasedRun reports on a run whose run.started can no longer be read,
// because the run's subject was erased: nothing of it can be replayed, and
// the report names the recorded answers that are gone (Report.Erased).
// It returns nil, nil for a run whose run.started reads, which Run
// replays, and for an unknown run, which Run reports as not found.
func ErasedRun(ctx context.Context, rt *rath.Runtime, runID string) (*Report, error) {
	first, err := rt.Store().ReadStreamUntil(ctx, runID, 1, 1<<62, 1)
	if err != nil {
		return nil, err
	}
	// An unknown run is the usual replay's to report, as for any run.
	if len(first) == 0 || first[0].Type != events.TypeRunStarted || !isErased(first[0]) {
		return nil, nil
	}
	evs, err := rt.Store().ReadRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	rep := &Report{Run: runID, Recorded: len(evs), Erased: []ErasedEvent{}}
	for _, ev := range evs {
		switch {
		case ev.Stream == runID && ev.Type == events.TypeRunFinished:
			rep.Finished = true
		case answerTypes[ev.Type] && isErased(ev):
			rep.Erased = append(rep.Erased, ErasedEvent{Seq: ev.Seq, Type: ev.Type})
		}
	}
	rep.Incomplete = !rep.Finished
	return rep, nil
}

// erasedAnswers lists the erased answers among evs.
func erasedAnswers(evs []events.Event) []ErasedEvent {
	var out []ErasedEvent
	for _, ev := range evs {
		if answerTypes[ev.Type] && isErased(ev) {
			out = append(out, ErasedEvent{Seq: ev.Seq, Type: ev.Type})
		}
	}
	return out
}

// erasedUnchecked words what a replay could not check of a run with
// erased answers.
func (r *Report) erasedUnchecked() string {
	n := min(len(r.Erased), 10)
	parts := make([]string, 0, n+1)
	for _, e := range r.Erased[:n] {
		parts = append(parts, fmt.Sprintf("seq %d %s", e.Seq, e.Type))
	}
	if len(r.Erased) > n {
		parts = append(parts, "…")
	}
	if len(parts) == 0 {
		return "the run's subject was erased: its record could not be checked"
	}
	return fmt.Sprintf("the run's subject was erased: %d recorded answers could not be checked (%s)", len(r.Erased), strings.Join(parts, ", "))
}
