package eval

import (
	"context"
	"fmt"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ScorerMean is one scorer's mean over an experiment's items.
type ScorerMean struct {
	Scorer string  `json:"scorer"`
	Mean   float64 `json:"mean"`
	Items  int     `json:"items"`
}

// Experiment is an experiment and its scores: for each item and scorer,
// the last one recorded.
type Experiment struct {
	Name       string       `json:"name"`
	Dataset    string       `json:"dataset"`
	StartedSeq int64        `json:"started_seq"`
	Means      []ScorerMean `json:"means"`
	Scores     []Score      `json:"-"`
}

// LoadExperiment reads an experiment; ErrNotFound if none.
func LoadExperiment(ctx context.Context, rt *rath.Runtime, name string) (*Experiment, error) {
	evs, err := rt.Store().ReadStream(ctx, events.ExperimentStream(name), 0)
	if err != nil {
		return nil, fmt.Errorf("eval: read experiment %q: %w", name, err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: experiment %q (rath experiments)", ErrNotFound, name)
	}
	x := &Experiment{Name: name}
	at := map[[2]string]int{} // (item, scorer) -> index in Scores
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("eval: experiment %q: %w", name, err)
		}
		switch e := p.(type) {
		case *events.ExperimentStarted:
			x.Dataset, x.StartedSeq = e.Dataset, ev.Seq
		case *events.ScoreRecorded:
			s := scoreOf(ev, e)
			k := [2]string{e.Item, e.Scorer}
			if i, ok := at[k]; ok {
				x.Scores[i] = s
			} else {
				at[k] = len(x.Scores)
				x.Scores = append(x.Scores, s)
			}
		}
	}
	x.Means = means(x.Scores)
	return x, nil
}

func scoreOf(ev events.Event, e *events.ScoreRecorded) Score {
	return Score{Item: e.Item, Run: e.Run, Scorer: e.Scorer, Version: e.ScorerVersion, ConfigHash: e.ConfigHash,
		Value: e.Value, Reason: e.Reason, Reads: e.Reads, Seq: ev.Seq}
}

func means(scores []Score) []ScorerMean {
	sum := map[string]float64{}
	n := map[string]int{}
	var order []string
	for _, s := range scores {
		if _, ok := n[s.Scorer]; !ok {
			order = append(order, s.Scorer)
		}
		sum[s.Scorer] += s.Value
		n[s.Scorer]++
	}
	out := make([]ScorerMean, 0, len(order))
	for _, sc := range order {
		out = append(out, ScorerMean{Scorer: sc, Mean: sum[sc] / float64(n[sc]), Items: n[sc]})
	}
	return out
}

// ListExperiments lists the experiments, oldest first, those over dataset
// only when it is not empty.
func ListExperiments(ctx context.Context, rt *rath.Runtime, dataset string) ([]*Experiment, error) {
	evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeExperimentStarted}})
	if err != nil {
		return nil, fmt.Errorf("eval: list experiments: %w", err)
	}
	var out []*Experiment
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("eval: list experiments: %w", err)
		}
		e := p.(*events.ExperimentStarted)
		if dataset != "" && e.Dataset != dataset {
			continue
		}
		x, err := LoadExperiment(ctx, rt, e.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// flipThreshold splits a value into pass (at or above) and fail.
const flipThreshold = 0.5

// ItemDelta is one item's score by one scorer in two experiments.
type ItemDelta struct {
	Item   string  `json:"item"`
	Scorer string  `json:"scorer"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Delta  float64 `json:"delta"`
	// Flipped says the item passed (value 0.5 or more) in one experiment
	// and failed in the other.
	Flipped bool `json:"flipped"`
}

// ScorerDelta is one scorer's means in two experiments.
type ScorerDelta struct {
	Scorer string  `json:"scorer"`
	MeanA  float64 `json:"mean_a"`
	MeanB  float64 `json:"mean_b"`
	Delta  float64 `json:"delta"`
}

// Comparison sets experiment B beside A.
type Comparison struct {
	A       string        `json:"a"`
	B       string        `json:"b"`
	Scorers []ScorerDelta `json:"scorers"` // the scorers both used
	Items   []ItemDelta   `json:"items"`
	// Flipped are the items of Items that flipped.
	Flipped []ItemDelta `json:"flipped"`
	// OnlyA and OnlyB are (item, scorer) pairs scored in one experiment
	// only, as "ITEM SCORER".
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
}

// Compare compares experiment b with a: the means of the scorers both
// used, per item deltas (b minus a) for the items and scorers both scored,
// and the items that flipped.
func Compare(ctx context.Context, rt *rath.Runtime, a, b string) (*Comparison, error) {
	xa, err := LoadExperiment(ctx, rt, a)
	if err != nil {
		return nil, err
	}
	xb, err := LoadExperiment(ctx, rt, b)
	if err != nil {
		return nil, err
	}
	c := &Comparison{A: a, B: b, Scorers: []ScorerDelta{}, Items: []ItemDelta{}, Flipped: []ItemDelta{}}
	inB := map[[2]string]Score{}
	for _, s := range xb.Scores {
		inB[[2]string{s.Item, s.Scorer}] = s
	}
	seen := map[[2]string]bool{}
	for _, sa := range xa.Scores {
		k := [2]string{sa.Item, sa.Scorer}
		sb, ok := inB[k]
		if !ok {
			c.OnlyA = append(c.OnlyA, sa.Item+" "+sa.Scorer)
			continue
		}
		seen[k] = true
		d := ItemDelta{Item: sa.Item, Scorer: sa.Scorer, A: sa.Value, B: sb.Value, Delta: sb.Value - sa.Value,
			Flipped: (sa.Value >= flipThreshold) != (sb.Value >= flipThreshold)}
		c.Items = append(c.Items, d)
		if d.Flipped {
			c.Flipped = append(c.Flipped, d)
		}
	}
	for _, sb := range xb.Scores {
		if !seen[[2]string{sb.Item, sb.Scorer}] {
			c.OnlyB = append(c.OnlyB, sb.Item+" "+sb.Scorer)
		}
	}
	mb := map[string]float64{}
	for _, m := range xb.Means {
		mb[m.Scorer] = m.Mean
	}
	for _, m := range xa.Means {
		if b, ok := mb[m.Scorer]; ok {
			c.Scorers = append(c.Scorers, ScorerDelta{Scorer: m.Scorer, MeanA: m.Mean, MeanB: b, Delta: b - m.Mean})
		}
	}
	return c, nil
}
