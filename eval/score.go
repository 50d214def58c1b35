package eval

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// EvalRun is the run id under which an experiment's events are recorded:
// its scores and its judges' model calls.
func EvalRun(experiment string) string { return "eval:" + experiment }

// recorder appends to store in the run of in's experiment, if it names
// one.
func (in ScoreInput) recorder(store *eventlog.Store) eventlog.Appender {
	if in.Experiment == "" {
		return store.In(eventlog.Scope{})
	}
	return store.In(eventlog.Scope{Run: events.RunRef{ID: EvalRun(in.Experiment)}})
}

// ScoreOptions name the experiment a scoring records into.
type ScoreOptions struct {
	// Experiment is the experiment's name; empty means DATASET-N, the
	// dataset's next free number.
	Experiment string
}

// Result is what ScoreDataset recorded.
type Result struct {
	Experiment string  `json:"experiment"`
	Dataset    string  `json:"dataset"`
	Scores     []Score `json:"scores"`
	// ModelCalls counts the calls the scorers made to a model; a judge
	// that answered from the record made none.
	ModelCalls int64 `json:"model_calls"`
	// Skipped are the items with no recorded run, which no scorer reads.
	Skipped []string `json:"skipped,omitempty"`
}

// ScoreDataset scores every item of ds that has a run with each scorer,
// recording one score.recorded event per item and scorer in the
// experiment (started if new; an existing one must be over the same
// dataset).
func ScoreDataset(ctx context.Context, rt *rath.Runtime, ds *Dataset, scorers []Scorer, opts ScoreOptions) (*Result, error) {
	if len(scorers) == 0 {
		return nil, specErr("no scorer given")
	}
	name := opts.Experiment
	var err error
	if name == "" {
		name, err = startNextExperiment(ctx, rt, ds)
	} else {
		err = StartExperiment(ctx, rt, name, ds)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Experiment: name, Dataset: ds.Name}
	for _, item := range ds.Items {
		if item.Run == "" {
			res.Skipped = append(res.Skipped, item.ID)
			continue
		}
		scores, err := recordScores(ctx, rt, name, ds, item, item.Run, scorers)
		if err != nil {
			return res, err
		}
		res.Scores = append(res.Scores, scores...)
	}
	for _, s := range scorers {
		if mc, ok := s.(ModelCaller); ok {
			res.ModelCalls += mc.ModelCalls()
		}
	}
	return res, nil
}

// StartExperiment records the experiment over ds unless it exists; an
// experiment of that name over another dataset is ErrExists.
func StartExperiment(ctx context.Context, rt *rath.Runtime, name string, ds *Dataset) error {
	if err := checkName("experiment", name); err != nil {
		return err
	}
	stream := events.ExperimentStream(name)
	_, err := rt.Store().Append(ctx, stream, eventlog.NoStream, &events.ExperimentStarted{Name: name, Dataset: ds.Name, DatasetSeq: ds.CreatedSeq})
	if !errors.Is(err, eventlog.ErrConflict) {
		if err != nil {
			return fmt.Errorf("eval: start experiment %q: %w", name, err)
		}
		return nil
	}
	first, err := rt.Store().ReadStreamUntil(ctx, stream, 1, math.MaxInt64, 1)
	if err != nil || len(first) == 0 {
		return fmt.Errorf("eval: experiment %q: %w", name, err)
	}
	p, err := first[0].Decode()
	if err != nil {
		return fmt.Errorf("eval: experiment %q: %w", name, err)
	}
	if e, ok := p.(*events.ExperimentStarted); !ok || e.Dataset != ds.Name || e.DatasetSeq != ds.CreatedSeq {
		return fmt.Errorf("%w: experiment %q is over another dataset (rath experiments)", ErrExists, name)
	}
	return nil
}

func startNextExperiment(ctx context.Context, rt *rath.Runtime, ds *Dataset) (string, error) {
	infos, err := ListExperiments(ctx, rt, "")
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, e := range infos {
		taken[e.Name] = true
	}
	for n := 1; ; n++ {
		name := fmt.Sprintf("%s-%d", ds.Name, n)
		if taken[name] {
			continue
		}
		_, err := rt.Store().Append(ctx, events.ExperimentStream(name), eventlog.NoStream, &events.ExperimentStarted{Name: name, Dataset: ds.Name, DatasetSeq: ds.CreatedSeq})
		if errors.Is(err, eventlog.ErrConflict) {
			continue // taken since we listed
		}
		if err != nil {
			return "", fmt.Errorf("eval: start experiment %q: %w", name, err)
		}
		return name, nil
	}
}

// RecordScores scores one item of ds with each scorer and records the
// scores in the experiment (started over ds if new). run is the run
// scored: the item's own (read through the seq it pins), or another, a
// new run of the same case, read whole.
func RecordScores(ctx context.Context, rt *rath.Runtime, experiment string, ds *Dataset, item Item, run string, scorers []Scorer) ([]Score, error) {
	if err := StartExperiment(ctx, rt, experiment, ds); err != nil {
		return nil, err
	}
	return recordScores(ctx, rt, experiment, ds, item, run, scorers)
}

// scorerConfig is the config hash a score by sc records.
func scorerConfig(sc Scorer) string {
	if c, ok := sc.(Configured); ok {
		return c.ConfigHash()
	}
	return configHash(sc.Name(), sc.Version())
}

func recordScores(ctx context.Context, rt *rath.Runtime, experiment string, ds *Dataset, item Item, run string, scorers []Scorer) ([]Score, error) {
	if run == "" {
		return nil, fmt.Errorf("%w: item %s has no run to score", ErrNotFound, item.ID)
	}
	evs, err := rt.Store().ReadRun(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("eval: read run %s: %w", run, err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: run %q of item %s has no events", ErrNotFound, run, item.ID)
	}
	if run == item.Run && item.LastSeq > 0 {
		n := len(evs)
		for n > 0 && evs[n-1].Seq > item.LastSeq {
			n--
		}
		evs = evs[:n]
	}
	in := ScoreInput{Dataset: ds.Name, Item: item, Run: run, Events: evs, Experiment: experiment}
	scores := make([]Score, 0, len(scorers))
	payloads := make([]events.Payload, 0, len(scorers))
	for _, sc := range scorers {
		s, err := sc.Score(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("eval: score item %s with %s: %w", item.ID, sc.Name(), err)
		}
		s.Item, s.Run, s.Scorer, s.Version, s.ConfigHash = item.ID, run, sc.Name(), sc.Version(), scorerConfig(sc)
		scores = append(scores, s)
		payloads = append(payloads, &events.ScoreRecorded{Experiment: experiment, Dataset: ds.Name, Item: item.ID, Run: run,
			Scorer: s.Scorer, ScorerVersion: s.Version, ConfigHash: s.ConfigHash, Value: s.Value, Reason: s.Reason, Reads: s.Reads})
	}
	stored, err := in.recorder(rt.Store()).Append(ctx, events.ExperimentStream(experiment), eventlog.AnyVersion, payloads...)
	if err != nil {
		return nil, fmt.Errorf("eval: record scores of item %s: %w", item.ID, err)
	}
	for i := range scores {
		scores[i].Seq = stored[i].Seq
	}
	return scores, nil
}
