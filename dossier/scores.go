package dossier

import (
	"context"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Score is one score of the run: a score.recorded event of an experiment
// that names the run, with the seqs of the events it read (rath verify
// checks their leaf hashes).
type Score struct {
	Seq           int64   `json:"seq"`
	Experiment    string  `json:"experiment"`
	Dataset       string  `json:"dataset"`
	Item          string  `json:"item"`
	Scorer        string  `json:"scorer"`
	ScorerVersion string  `json:"scorer_version"`
	ConfigHash    string  `json:"config_hash"`
	Value         float64 `json:"value"`
	Reason        string  `json:"reason,omitempty"`
	Reads         []int64 `json:"reads"`
}

// scores reads the scores that name the run; they are not the run's own
// events (an experiment recorded them, in its eval run).
func (b *builder) scores(ctx context.Context, runID string) error {
	evs, err := b.rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeScoreRecorded}})
	if err != nil {
		return fmt.Errorf("dossier: scores of %s: %w", runID, err)
	}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			continue // a redacted score is no longer shown
		}
		sc := p.(*events.ScoreRecorded)
		if sc.Run != runID {
			continue
		}
		s := Score{Seq: ev.Seq, Experiment: sc.Experiment, Dataset: sc.Dataset, Item: sc.Item, Scorer: sc.Scorer,
			ScorerVersion: sc.ScorerVersion, ConfigHash: sc.ConfigHash, Value: sc.Value, Reason: sc.Reason, Reads: []int64{}}
		for _, r := range sc.Reads {
			s.Reads = append(s.Reads, r.Seq)
		}
		b.d.Scores = append(b.d.Scores, s)
	}
	return nil
}
