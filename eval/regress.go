package eval

import (
	"context"
	"fmt"
	"sync"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// Outcomes of a regression check (RegressItem.Outcome).
const (
	// OutcomeSame: the re-executed run reproduced every recorded event.
	OutcomeSame = "same"
	// OutcomeDiverged: the re-executed run differs from the record at
	// RegressItem.Seq, every call it made having a recorded answer.
	OutcomeDiverged = "diverged"
	// OutcomeNeedsLive ("needs live answers"): the re-executed run made a request the record
	// has no answer for (a changed or extra model or tool call) at
	// RegressItem.Seq; it went no further, unless RegressOptions.Live
	// continued it as a new run (RegressItem.LiveRun).
	OutcomeNeedsLive = "needs_live"
	// OutcomeError: the run could not be re-executed at all (its
	// workflow cannot be rebuilt, its events were redacted).
	OutcomeError = "error"
)

// RegressCase is one recorded run to check: Item names it in its
// dataset ("" outside one).
type RegressCase struct {
	Item string
	Run  string
}

// RegressOptions configure Regress. The zero value re-executes each run
// with rath.Runtime.RecordedWorkflow and goes nowhere live.
type RegressOptions struct {
	// Workflow returns the workflow run is re-executed with: the one as
	// it is now (today's code, prompts and config). Nil means
	// rt.RecordedWorkflow, which gives a registered workflow's current
	// code and a recorded spec otherwise.
	Workflow func(ctx context.Context, run string) (flow.Workflow, error)
	// Live, if set, returns the workflow a run that needs live answers
	// goes on with, its providers calling the configured model: the run
	// is re-executed as a new run linked to the baseline (parent_run),
	// answered from the record up to the changed request and live from
	// there. Nil: such a run stops at the changed request.
	Live func(ctx context.Context, run string) (flow.Workflow, error)
	// Progress, if set, is called after each run is checked, one call at
	// a time, done counting up.
	Progress func(done, total int)
	// Parallel is how many runs are re-executed at once, each in its own
	// scratch store. The report lists them in case order whatever order
	// they finish in. Zero or less means 1.
	Parallel int
	// Experiment and Scorers, both set, score each run that went on live
	// in that experiment (RecordScores; RegressDataset only): the new
	// run beside the baseline's scores. The baseline's score is the one
	// the experiment holds of the item's recorded run by the same scorer
	// at the same configuration; where it holds none, the recorded run is
	// scored first.
	Experiment string
	Scorers    []Scorer
	// Tolerance is how far a live run's score may fall below the
	// baseline's before it counts as fallen (RegressItem.Fell). Zero: any
	// fall counts.
	Tolerance float64
}

// RegressItem is what Regress found for one run.
type RegressItem struct {
	Item    string `json:"item,omitempty"`
	Run     string `json:"run"`
	Outcome string `json:"outcome"`
	// Seq is the recorded event where the run first differs (0 when
	// the same).
	Seq int64 `json:"seq,omitempty"`
	// Kind is what differs there: "model request", "tool call", "tool
	// result", "transcript", "memory recall", or the event type.
	Kind string `json:"kind,omitempty"`
	// Change is replay.ChangeStructural (another tool, other arguments,
	// other messages or settings) or replay.ChangeWording (the same
	// structure, other text); "" when it cannot be told.
	Change string `json:"change,omitempty"`
	// Divergence is the replay's account of the first difference.
	Divergence *replay.Divergence `json:"divergence,omitempty"`
	// LiveRun is the new run that went on live (RegressOptions.Live),
	// and LiveError why it stopped early, if it did.
	LiveRun   string `json:"live_run,omitempty"`
	LiveError string `json:"live_error,omitempty"`
	// Scores are the live run's scores (RegressOptions.Scorers),
	// Baseline the recorded run's by the same scorers, in the same
	// order, and Fell the scores that fell beyond the tolerance.
	Scores   []Score     `json:"scores,omitempty"`
	Baseline []Score     `json:"baseline_scores,omitempty"`
	Fell     []ScoreFall `json:"scores_fell,omitempty"`
	// Error is why the run could not be re-executed (OutcomeError).
	Error string `json:"error,omitempty"`
	// Answered counts the model and tool calls answered from the record.
	Answered int `json:"answered"`
}

// Regressed reports whether the item is not the same as its record.
func (it RegressItem) Regressed() bool { return it.Outcome != OutcomeSame }

// Verdict is the item in words: "same", "diverged at seq S: KIND
// (CHANGE)", "needs live answers at seq S: …", "error: …".
func (it RegressItem) Verdict() string {
	switch it.Outcome {
	case OutcomeSame:
		return OutcomeSame
	case OutcomeError:
		return "error: " + it.Error
	}
	what := it.Kind
	if it.Change != "" {
		what += ", " + it.Change
	}
	v := fmt.Sprintf("diverged at seq %d: %s", it.Seq, what)
	if it.Outcome == OutcomeNeedsLive {
		v += "; needs live answers"
		if it.LiveRun != "" {
			v += ", went on live as " + it.LiveRun
		}
	}
	return v
}

// RegressReport is the outcome of Regress over a set of runs.
type RegressReport struct {
	Items     []RegressItem `json:"items"`
	Same      int           `json:"same"`
	Diverged  int           `json:"diverged"`
	NeedsLive int           `json:"needs_live"`
	Errors    int           `json:"errors"`
	// Unrecorded counts the dataset's items with no recording (cases from
	// JSONL): there is nothing of theirs to re-execute.
	Unrecorded int `json:"unrecorded,omitempty"`
	// Tolerance is RegressOptions.Tolerance, for the reader of Falls.
	Tolerance float64 `json:"tolerance,omitempty"`
}

// Falls lists the scores that fell beyond the tolerance, item by item.
func (r *RegressReport) Falls() []ScoreFall {
	var out []ScoreFall
	for _, it := range r.Items {
		out = append(out, it.Fell...)
	}
	return out
}

// FellError is a *ScoreFellError naming the scores that fell, or nil
// when none did.
func (r *RegressReport) FellError() error {
	falls := r.Falls()
	if len(falls) == 0 {
		return nil
	}
	return &ScoreFellError{Tolerance: r.Tolerance, Falls: falls}
}

// RegressDataset is Regress over the items of ds that have a recorded
// run. With opts.Experiment and opts.Scorers, each run that went on live
// is scored in that experiment as a run of its item.
func RegressDataset(ctx context.Context, rt *rath.Runtime, ds *Dataset, opts RegressOptions) (*RegressReport, error) {
	var cases []RegressCase
	byID := map[string]Item{}
	unrecorded := 0
	for _, it := range ds.Items {
		if it.Run == "" {
			unrecorded++
			continue
		}
		cases = append(cases, RegressCase{Item: it.ID, Run: it.Run})
		byID[it.ID] = it
	}
	rep, err := Regress(ctx, rt, cases, opts)
	if err != nil {
		return rep, err
	}
	rep.Unrecorded = unrecorded
	if opts.Experiment == "" || len(opts.Scorers) == 0 {
		return rep, nil
	}
	rep.Tolerance = opts.Tolerance
	// The baseline's scores are those recorded before this check.
	prior, err := recordedScores(ctx, rt, opts.Experiment)
	if err != nil {
		return rep, err
	}
	for i, it := range rep.Items {
		if it.LiveRun == "" {
			continue
		}
		if err := compareLive(ctx, rt, ds, byID[it.Item], &rep.Items[i], prior, opts); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Regressed reports whether any item is not the same as its record, or
// a score fell.
func (r *RegressReport) Regressed() bool { return r.Same != len(r.Items) || len(r.Falls()) > 0 }

// Regress re-executes each case's run with the workflow as it is now
// (opts.Workflow) in a scratch store, answering model and tool calls
// from the record while the requests match, and reports per run whether
// it reproduced the record. opts.Parallel runs are re-executed at once;
// the report keeps the cases' order. A run that cannot be re-executed is an item
// of OutcomeError, not an error of Regress; the error is for the context
// ending and failures of the store.
func Regress(ctx context.Context, rt *rath.Runtime, cases []RegressCase, opts RegressOptions) (*RegressReport, error) {
	if opts.Workflow == nil {
		opts.Workflow = func(ctx context.Context, run string) (flow.Workflow, error) {
			return rt.RecordedWorkflow(ctx, run, rath.ReplayMode)
		}
	}
	items := make([]RegressItem, len(cases))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // protects done, and serializes Progress
		done int
	)
	next := make(chan int)
	for range min(max(opts.Parallel, 1), len(cases)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				items[i] = regressOne(ctx, rt, cases[i], opts)
				mu.Lock()
				done++
				if opts.Progress != nil {
					opts.Progress(done, len(cases))
				}
				mu.Unlock()
			}
		}()
	}
	fed := 0
	for ; fed < len(cases) && ctx.Err() == nil; fed++ {
		select {
		case next <- fed:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		// What was handed out before the end may be cut short too.
		fed = 0
		for fed < len(items) && items[fed].Run != "" {
			fed++
		}
	}
	rep := &RegressReport{Items: items[:fed]}
	for _, it := range rep.Items {
		switch it.Outcome {
		case OutcomeSame:
			rep.Same++
		case OutcomeDiverged:
			rep.Diverged++
		case OutcomeNeedsLive:
			rep.NeedsLive++
		default:
			rep.Errors++
		}
	}
	return rep, ctx.Err()
}

func regressOne(ctx context.Context, rt *rath.Runtime, c RegressCase, opts RegressOptions) RegressItem {
	it := RegressItem{Item: c.Item, Run: c.Run}
	fail := func(err error) RegressItem {
		it.Outcome, it.Error = OutcomeError, err.Error()
		return it
	}
	wf, err := opts.Workflow(ctx, c.Run)
	if err != nil {
		return fail(err)
	}
	r, err := replay.Run(ctx, rt, c.Run, wf)
	if err != nil {
		return fail(err)
	}
	it.Answered = r.Answered
	d := r.Divergence
	if d == nil {
		it.Outcome = OutcomeSame
		return it
	}
	it.Outcome, it.Seq, it.Kind, it.Change, it.Divergence = OutcomeDiverged, d.Seq, kindOf(d), d.Change, d
	if !d.Unanswered {
		return it
	}
	it.Outcome = OutcomeNeedsLive
	if opts.Live == nil || d.Seq <= 1 {
		return it
	}
	live, err := opts.Live(ctx, c.Run)
	if err != nil {
		it.LiveError = err.Error()
		return it
	}
	// The fork replays the record before the changed request and calls
	// the model from there on.
	run, err := replay.ForkAt(ctx, rt, c.Run, d.Seq-1, live)
	if run != nil {
		it.LiveRun = run.ID
	}
	if err != nil {
		it.LiveError = err.Error()
	}
	return it
}

// kindOf names what a divergence is about, for a reader.
func kindOf(d *replay.Divergence) string {
	switch d.Type {
	case events.TypeProviderCalled, events.TypeProviderFailed:
		return "model request"
	case events.TypeToolCalled:
		return "tool call"
	case events.TypeToolReturned:
		if d.Unanswered {
			return "tool call"
		}
		return "tool result"
	case events.TypeChunkAppended:
		return "transcript"
	case events.TypeMemoryRecalled:
		return "memory recall"
	}
	return d.Type
}
