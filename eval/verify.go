package eval

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// VerifyReport says what VerifyScores checked.
type VerifyReport struct {
	// Scores, Items and Counterfactuals count the score.recorded,
	// dataset.item_added and counterfactual.forked events checked; Reads
	// the events they name.
	Scores, Items, Counterfactuals, Reads int
	// Failure is the first score or item whose recorded leaf hash does
	// not match the event it names, nil if none.
	Failure *ScoreMismatchError
}

// reference is one recorded leaf hash of an event, by the event at
// holder that recorded it.
type reference struct {
	holder int64
	what   string
	read   events.ScoreRead
}

// VerifyScores recomputes the leaf of every event a score read (and every
// run's last event a dataset item pins) from its row and compares it with
// the leaf hash recorded then, as it does for the event each
// counterfactual run replaced. An event edited behind rath's back, or a
// score whose recorded hashes were edited, fails naming both seqs.
func VerifyScores(ctx context.Context, rt *rath.Runtime) (*VerifyReport, error) {
	evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeScoreRecorded, events.TypeDatasetItemAdded, events.TypeCounterfactualForked}})
	if err != nil {
		return nil, fmt.Errorf("eval: verify scores: %w", err)
	}
	rep := &VerifyReport{}
	var refs []reference
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			if errors.Is(err, events.ErrRedacted) {
				continue
			}
			rep.Failure = &ScoreMismatchError{What: ev.Type, ScoreSeq: ev.Seq, Reason: err.Error()}
			return rep, nil
		}
		switch e := p.(type) {
		case *events.ScoreRecorded:
			rep.Scores++
			for _, r := range e.Reads {
				refs = append(refs, reference{ev.Seq, "score", r})
			}
		case *events.CounterfactualForked:
			rep.Counterfactuals++
			refs = append(refs, reference{ev.Seq, "counterfactual", events.ScoreRead{Seq: e.At, Leaf: e.Replaced}})
		case *events.DatasetItemAdded:
			rep.Items++
			if e.Run != "" {
				refs = append(refs, reference{ev.Seq, "dataset item", events.ScoreRead{Seq: e.LastSeq, Leaf: e.LastLeaf}})
			}
		}
	}
	var seqs []int64
	for _, r := range refs {
		seqs = append(seqs, r.read.Seq)
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	rep.Reads = len(seqs)
	leaves, bad := map[int64]string{}, map[int64]string{}
	for start := 0; start < len(seqs); start += 500 {
		part := seqs[start:min(start+500, len(seqs))]
		ls, err := rt.Store().Leaves(ctx, part)
		if err != nil {
			// One row spoils its part: read them one by one to name it.
			for _, seq := range part {
				l, err := rt.Store().Leaves(ctx, []int64{seq})
				if err != nil {
					var ve *eventlog.VerifyError
					if !errors.As(err, &ve) && !errors.Is(err, eventlog.ErrNotFound) {
						return nil, fmt.Errorf("eval: verify scores: %w", err)
					}
					bad[seq] = err.Error()
					continue
				}
				leaves[seq] = leafHash(l[0])
			}
			continue
		}
		for _, l := range ls {
			leaves[l.Seq] = leafHash(l)
		}
	}
	for _, r := range refs {
		if reason, ok := bad[r.read.Seq]; ok {
			rep.Failure = &ScoreMismatchError{What: r.what, ScoreSeq: r.holder, EventSeq: r.read.Seq, Recorded: r.read.Leaf, Reason: reason}
			return rep, nil
		}
		if got := leaves[r.read.Seq]; got != r.read.Leaf {
			rep.Failure = &ScoreMismatchError{What: r.what, ScoreSeq: r.holder, EventSeq: r.read.Seq, Recorded: r.read.Leaf, Actual: got}
			return rep, nil
		}
	}
	return rep, nil
}

// leafHash is the leaf hash of l as its row now stands: for an event of
// the Merkle log, recomputed from its header and salted payload; for one
// of the older hash chain, its chain hash (which the chain check covers).
func leafHash(l eventlog.Leaf) string {
	if l.Salt == nil {
		return l.Event.Hash
	}
	h := tlog.RecordHash(l.Line)
	return hex.EncodeToString(h[:])
}
