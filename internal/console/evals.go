package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// The Evals page's endpoints read what package eval recorded: datasets,
// experiments and their scores, and the comparison of two experiments.
// They never score: a score is recorded by `rath score` or the library.

// DatasetsView is GET /api/evals/datasets: the datasets, oldest first,
// and the experiments, each with its per scorer means.
type DatasetsView struct {
	Datasets    []eval.DatasetInfo `json:"datasets"`
	Experiments []ExperimentInfo   `json:"experiments"`
}

// ExperimentInfo is one experiment without its scores.
type ExperimentInfo struct {
	Name       string            `json:"name"`
	Dataset    string            `json:"dataset"`
	StartedSeq int64             `json:"started_seq"`
	Means      []eval.ScorerMean `json:"means"`
	Scores     int               `json:"scores"`
}

// DatasetView is GET /api/evals/datasets/{name}: its items and the
// experiments over it.
type DatasetView struct {
	Name        string           `json:"name"`
	ID          string           `json:"id"` // leaf hash of its dataset.created event
	Source      string           `json:"source"`
	CreatedSeq  int64            `json:"created_seq"`
	Items       []ItemView       `json:"items"`
	Experiments []ExperimentInfo `json:"experiments"`
}

// ItemView is one dataset item. Run is empty for a case with no
// recording yet.
type ItemView struct {
	ID           string          `json:"id"`
	Run          string          `json:"run,omitempty"`
	InputSession string          `json:"input_session,omitempty"`
	LastSeq      int64           `json:"last_seq,omitempty"`
	LastLeaf     string          `json:"last_leaf,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Ideal        json.RawMessage `json:"ideal,omitempty"`
	Metadata     map[string]any  `json:"metadata,omitempty"`
	Seq          int64           `json:"seq"`
}

// ExperimentView is GET /api/evals/experiments/{name}: its means and,
// per item and scorer, the last score recorded.
type ExperimentView struct {
	ExperimentInfo
	Scores []ScoreView `json:"scores"`
}

// ScoreView is one score.recorded event: the verdict, the scorer's
// identity, and the events it read.
type ScoreView struct {
	Seq        int64      `json:"seq"`
	Item       string     `json:"item"`
	Run        string     `json:"run"`
	Scorer     string     `json:"scorer"`
	Version    string     `json:"version"`
	ConfigHash string     `json:"config_hash"`
	Value      float64    `json:"value"`
	Reason     string     `json:"reason"`
	Reads      []ReadView `json:"reads"`
}

// ReadView is one event a score read. Run is the run the event belongs
// to (a judge's model call is the experiment's run, eval:NAME); Matches
// says the log's event there still has the leaf hash the score recorded
// (false when it is gone: `rath verify` names both seqs).
type ReadView struct {
	Seq     int64  `json:"seq"`
	Leaf    string `json:"leaf"`
	Run     string `json:"run,omitempty"`
	Type    string `json:"type,omitempty"`
	Matches bool   `json:"matches"`
}

// EvalCompareView is GET /api/evals/compare?a=A&b=B: eval.Compare's
// answer, and the run each experiment scored for each item.
type EvalCompareView struct {
	eval.Comparison
	// RunsA and RunsB map an item to the run scored for it in A and B (a
	// regression scores a new run of the case).
	RunsA map[string]string `json:"runs_a"`
	RunsB map[string]string `json:"runs_b"`
}

func (s *Server) apiEvalDatasets(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ds, err := eval.ListDatasets(ctx, s.rt)
	if evalError(w, err) {
		return
	}
	xs, err := s.experimentInfos(ctx, "")
	if evalError(w, err) {
		return
	}
	if ds == nil {
		ds = []eval.DatasetInfo{}
	}
	writeJSON(w, http.StatusOK, DatasetsView{Datasets: ds, Experiments: xs})
}

func (s *Server) apiEvalDataset(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ds, err := eval.LoadDataset(ctx, s.rt, r.PathValue("name"))
	if evalError(w, err) {
		return
	}
	xs, err := s.experimentInfos(ctx, ds.Name)
	if evalError(w, err) {
		return
	}
	v := DatasetView{Name: ds.Name, ID: ds.ID, Source: ds.Source, CreatedSeq: ds.CreatedSeq, Items: make([]ItemView, 0, len(ds.Items)), Experiments: xs}
	for _, it := range ds.Items {
		v.Items = append(v.Items, ItemView{ID: it.ID, Run: it.Run, InputSession: it.InputSession, LastSeq: it.LastSeq, LastLeaf: it.LastLeaf,
			Input: it.Input, Ideal: it.Ideal, Metadata: it.Metadata, Seq: it.Seq})
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) apiEvalExperiment(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	x, err := eval.LoadExperiment(ctx, s.rt, r.PathValue("name"))
	if evalError(w, err) {
		return
	}
	v := ExperimentView{ExperimentInfo: infoOf(x), Scores: make([]ScoreView, 0, len(x.Scores))}
	seen := map[int64]events.Event{}
	for _, sc := range x.Scores {
		sv := ScoreView{Seq: sc.Seq, Item: sc.Item, Run: sc.Run, Scorer: sc.Scorer, Version: sc.Version, ConfigHash: sc.ConfigHash,
			Value: sc.Value, Reason: sc.Reason, Reads: make([]ReadView, 0, len(sc.Reads))}
		for _, rd := range sc.Reads {
			ev, err := s.eventAt(ctx, rd.Seq, seen)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "%v", err)
				return
			}
			sv.Reads = append(sv.Reads, ReadView{Seq: rd.Seq, Leaf: rd.Leaf, Run: ev.RunID, Type: ev.Type, Matches: ev.Seq == rd.Seq && ev.Hash == rd.Leaf})
		}
		v.Scores = append(v.Scores, sv)
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) apiEvalCompare(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a, b := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	if a == "" || b == "" {
		writeError(w, http.StatusBadRequest, "compare: want ?a=EXPERIMENT&b=EXPERIMENT")
		return
	}
	c, err := eval.Compare(ctx, s.rt, a, b)
	if evalError(w, err) {
		return
	}
	v := EvalCompareView{Comparison: *c}
	for _, side := range []struct {
		name string
		dst  *map[string]string
	}{{a, &v.RunsA}, {b, &v.RunsB}} {
		x, err := eval.LoadExperiment(ctx, s.rt, side.name)
		if evalError(w, err) {
			return
		}
		*side.dst = map[string]string{}
		for _, sc := range x.Scores {
			(*side.dst)[sc.Item] = sc.Run
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// experimentInfos lists the experiments (over dataset, if not empty).
func (s *Server) experimentInfos(ctx context.Context, dataset string) ([]ExperimentInfo, error) {
	xs, err := eval.ListExperiments(ctx, s.rt, dataset)
	if err != nil {
		return nil, err
	}
	out := make([]ExperimentInfo, 0, len(xs))
	for _, x := range xs {
		out = append(out, infoOf(x))
	}
	return out, nil
}

func infoOf(x *eval.Experiment) ExperimentInfo {
	m := x.Means
	if m == nil {
		m = []eval.ScorerMean{}
	}
	return ExperimentInfo{Name: x.Name, Dataset: x.Dataset, StartedSeq: x.StartedSeq, Means: m, Scores: len(x.Scores)}
}

// eventAt reads the event at seq (through seen, the events this request
// read already); a seq the log does not hold is the zero Event.
func (s *Server) eventAt(ctx context.Context, seq int64, seen map[int64]events.Event) (events.Event, error) {
	if ev, ok := seen[seq]; ok {
		return ev, nil
	}
	evs, err := s.rt.Store().Read(ctx, eventlog.Query{FromSeq: seq, ToSeq: seq, Limit: 1})
	if err != nil {
		return events.Event{}, fmt.Errorf("read seq %d: %w", seq, err)
	}
	var ev events.Event
	if len(evs) == 1 && evs[0].Seq == seq {
		ev = evs[0]
	}
	seen[seq] = ev
	return ev, nil
}

// evalError answers eval.ErrNotFound with 404 and any other error with
// 500; it reports whether it answered.
func evalError(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, eval.ErrNotFound):
		writeError(w, http.StatusNotFound, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "%v", err)
	}
	return true
}
