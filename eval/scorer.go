package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/gorath/rath/events"
)

// Scorer scores one dataset item. Name and Version are its identity in
// every score it records: bump the version when its verdicts change.
type Scorer interface {
	Name() string
	Version() string
	Score(ctx context.Context, in ScoreInput) (Score, error)
}

// Configured is implemented by scorers whose verdict depends on a
// configuration (a text, a schema, a judge file): ConfigHash is the
// SHA-256 (hex) of it, recorded with each score. A scorer without it is
// recorded with the hash of its name and version.
type Configured interface {
	ConfigHash() string
}

// ModelCaller is implemented by scorers that may call a model (a judge):
// ModelCalls is how many calls they made.
type ModelCaller interface {
	ModelCalls() int64
}

// ScoreInput is what a scorer reads: the item and, for an item with a
// recorded run, the run's events through the seq the item pins.
type ScoreInput struct {
	Dataset string
	Item    Item
	// Run is the run scored: the item's, or another given to RecordScores
	// (a regression's new run).
	Run    string
	Events []events.Event
	// Experiment is the experiment the score is recorded in ("" if
	// none): what a scorer records of its own (a judge's model calls)
	// belongs to its run, EvalRun(Experiment), as the scores do.
	Experiment string
}

// Score is one scorer's verdict on one item.
type Score struct {
	Item, Run                   string
	Scorer, Version, ConfigHash string
	Value                       float64
	Reason                      string
	// Reads are the events the verdict depends on, with their leaf hashes.
	Reads []events.ScoreRead
	// Seq is the score.recorded event's seq, once recorded.
	Seq int64
}

// readOf is what a score records of an event it read.
func readOf(ev events.Event) events.ScoreRead { return events.ScoreRead{Seq: ev.Seq, Leaf: ev.Hash} }

// Output returns the run's answer: the content of the last assistant
// chunk the run appended, and the event that holds it (ok false when the
// run appended none).
func (in ScoreInput) Output() (text string, ev events.Event, ok bool) {
	for i := len(in.Events) - 1; i >= 0; i-- {
		e := in.Events[i]
		if e.Type != events.TypeChunkAppended {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			continue
		}
		if c := p.(*events.ChunkAppended).Chunk; c.Role == events.RoleAssistant && c.Content != "" {
			return c.Content, e, true
		}
	}
	return "", events.Event{}, false
}

// Ideal returns the item's ideal answer as text: a JSON string's value, the
// first of a list of strings (OpenAI evals' form), else the JSON itself.
func (in ScoreInput) Ideal() string { return jsonText(in.Item.Ideal) }

// InputText returns the item's input as text, like Ideal.
func (in ScoreInput) InputText() string { return jsonText(in.Item.Input) }

func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		return list[0]
	}
	return string(raw)
}

// configHash is the SHA-256 (hex) of a scorer's configuration.
func configHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
