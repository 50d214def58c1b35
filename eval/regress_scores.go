package eval

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// ScoreFall is a score of a run that went on live lower than its
// baseline's by more than the tolerance (RegressOptions.Tolerance): the
// same scorer, at the same configuration, gave the item's recorded run
// Baseline and the new run Live.
type ScoreFall struct {
	Item     string  `json:"item"`
	Scorer   string  `json:"scorer"`
	Baseline float64 `json:"baseline"`
	Live     float64 `json:"live"`
	// BaselineSeq and LiveSeq are the two score.recorded events.
	BaselineSeq int64 `json:"baseline_seq"`
	LiveSeq     int64 `json:"live_seq"`
}

func (f ScoreFall) String() string {
	return fmt.Sprintf("%s %s %g → %g (seq %d, %d)", f.Item, f.Scorer, f.Baseline, f.Live, f.BaselineSeq, f.LiveSeq)
}

// scoreKey names a score of one run by one scorer configuration.
type scoreKey struct{ item, run, scorer, config string }

// recordedScores reads the last score of each item, run and scorer
// configuration recorded in experiment (none if it does not exist yet).
func recordedScores(ctx context.Context, rt *rath.Runtime, experiment string) (map[scoreKey]Score, error) {
	evs, err := rt.Store().ReadStream(ctx, events.ExperimentStream(experiment), 0)
	if err != nil {
		return nil, fmt.Errorf("eval: read experiment %q: %w", experiment, err)
	}
	out := map[scoreKey]Score{}
	for _, ev := range evs {
		if ev.Type != events.TypeScoreRecorded {
			continue
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("eval: experiment %q: %w", experiment, err)
		}
		e := p.(*events.ScoreRecorded)
		out[scoreKey{e.Item, e.Run, e.Scorer, e.ConfigHash}] = scoreOf(ev, e)
	}
	return out, nil
}

// compareLive scores the run of item that went on live and compares each
// score with the baseline's: the score the experiment holds of the item's
// recorded run by the same scorer configuration, or, where it holds none,
// one recorded now by scoring that run.
func compareLive(ctx context.Context, rt *rath.Runtime, ds *Dataset, item Item, it *RegressItem, prior map[scoreKey]Score, opts RegressOptions) error {
	base := map[string]Score{}
	var missing []Scorer
	for _, sc := range opts.Scorers {
		if s, ok := prior[scoreKey{item.ID, item.Run, sc.Name(), scorerConfig(sc)}]; ok {
			base[sc.Name()] = s
		} else {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		scores, err := RecordScores(ctx, rt, opts.Experiment, ds, item, item.Run, missing)
		if err != nil {
			return fmt.Errorf("regress: score baseline run %s: %w", item.Run, err)
		}
		for _, s := range scores {
			base[s.Scorer] = s
		}
	}
	scores, err := RecordScores(ctx, rt, opts.Experiment, ds, item, it.LiveRun, opts.Scorers)
	if err != nil {
		return fmt.Errorf("regress: score live run %s: %w", it.LiveRun, err)
	}
	it.Scores = scores
	for _, sc := range opts.Scorers {
		it.Baseline = append(it.Baseline, base[sc.Name()])
	}
	for _, s := range scores {
		b := base[s.Scorer]
		if b.Value-s.Value > opts.Tolerance {
			it.Fell = append(it.Fell, ScoreFall{Item: item.ID, Scorer: s.Scorer, Baseline: b.Value, Live: s.Value, BaselineSeq: b.Seq, LiveSeq: s.Seq})
		}
	}
	return nil
}

// ScoreFellError says which scores of the runs that went on live fell
// below their baseline's by more than Tolerance.
type ScoreFellError struct {
	Tolerance float64
	Falls     []ScoreFall
}

func (e *ScoreFellError) Error() string {
	parts := make([]string, len(e.Falls))
	for i, f := range e.Falls {
		parts[i] = f.String()
	}
	return fmt.Sprintf("eval: %d scores fell by more than %g below the baseline's: %s", len(e.Falls), e.Tolerance, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrScoreFell) true.
func (e *ScoreFellError) Is(target error) bool { return target == ErrScoreFell }
