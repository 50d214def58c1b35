package events

import "math"

// Event types of evals over recorded runs (package eval): datasets that pin
// runs, experiments and the scores they record.
const (
	TypeDatasetCreated    = "dataset.created"
	TypeDatasetItemAdded  = "dataset.item_added"
	TypeExperimentStarted = "experiment.started"
	TypeScoreRecorded     = "score.recorded"
)

// DatasetStream is the stream of one dataset, by name: dataset.created at
// version 1, then one dataset.item_added per item. A second dataset of
// the same name conflicts at version 0.
func DatasetStream(name string) string { return "dataset:" + name }

// ExperimentStream is the stream of one experiment, by name:
// experiment.started at version 1, then its score.recorded events.
func ExperimentStream(name string) string { return "experiment:" + name }

// DatasetCreated opens a dataset. Source says where its items come from:
// "runs" (recorded runs, pinned) or "jsonl" (cases with no recording);
// Filter is the selection that chose the runs, for the reader.
type DatasetCreated struct {
	Name   string            `json:"name"`
	Source string            `json:"source"`
	Filter map[string]string `json:"filter,omitempty"`
	// Tenant is the tenant the dataset belongs to (empty: DefaultTenant).
	Tenant string `json:"tenant,omitempty"`
}

func (DatasetCreated) EventType() string  { return TypeDatasetCreated }
func (DatasetCreated) EventVersion() int  { return 1 }
func (e DatasetCreated) StreamID() string { return DatasetStream(e.Name) }
func (e DatasetCreated) Validate() error {
	if e.Name == "" {
		return invalid("dataset.created needs a name")
	}
	if e.Source != "runs" && e.Source != "jsonl" {
		return invalid("dataset.created source %q is not runs or jsonl", e.Source)
	}
	return checkTenantOf("dataset.created", e.Tenant)
}

// DatasetItemAdded adds one item to a dataset. An item of a recorded run
// pins the run, its input session and its last event (LastSeq and that
// event's leaf hash LastLeaf), so the item names one exact record. Input,
// Ideal and Metadata are canonical JSON text ("" when absent).
type DatasetItemAdded struct {
	Dataset      string `json:"dataset"`
	Item         string `json:"item"`
	Run          string `json:"run,omitempty"`
	InputSession string `json:"input_session,omitempty"`
	LastSeq      int64  `json:"last_seq,omitempty"`
	LastLeaf     string `json:"last_leaf,omitempty"`
	Input        string `json:"input,omitempty"`
	Ideal        string `json:"ideal,omitempty"`
	Metadata     string `json:"metadata,omitempty"`
}

func (DatasetItemAdded) EventType() string  { return TypeDatasetItemAdded }
func (DatasetItemAdded) EventVersion() int  { return 1 }
func (e DatasetItemAdded) StreamID() string { return DatasetStream(e.Dataset) }
func (e DatasetItemAdded) Validate() error {
	if e.Dataset == "" || e.Item == "" {
		return invalid("dataset.item_added needs a dataset and an item id")
	}
	if e.Run != "" && (e.LastSeq <= 0 || e.LastLeaf == "") {
		return invalid("dataset.item_added of run %q needs the seq and leaf hash of its last event", e.Run)
	}
	return nil
}

// ExperimentStarted opens an experiment over a dataset (its
// dataset.created seq pins which one, should the name be reused after a
// redaction).
type ExperimentStarted struct {
	Name       string `json:"name"`
	Dataset    string `json:"dataset"`
	DatasetSeq int64  `json:"dataset_seq"`
}

func (ExperimentStarted) EventType() string  { return TypeExperimentStarted }
func (ExperimentStarted) EventVersion() int  { return 1 }
func (e ExperimentStarted) StreamID() string { return ExperimentStream(e.Name) }
func (e ExperimentStarted) Validate() error {
	if e.Name == "" || e.Dataset == "" {
		return invalid("experiment.started needs a name and a dataset")
	}
	return nil
}

// ScoreRead is one event a score read: its seq and the leaf hash it had
// when the score was computed.
type ScoreRead struct {
	Seq  int64  `json:"seq"`
	Leaf string `json:"leaf"`
}

// ScoreRecorded is one scorer's verdict on one dataset item: the scorer's
// identity (name, version and the SHA-256 of its configuration), the value
// (0 to 1 for the built-in scorers), the reason, and the events it read
// with their leaf hashes, which verify checks against the log.
type ScoreRecorded struct {
	Experiment    string      `json:"experiment"`
	Dataset       string      `json:"dataset"`
	Item          string      `json:"item"`
	Run           string      `json:"run,omitempty"`
	Scorer        string      `json:"scorer"`
	ScorerVersion string      `json:"scorer_version"`
	ConfigHash    string      `json:"config_hash"`
	Value         float64     `json:"value"`
	Reason        string      `json:"reason,omitempty"`
	Reads         []ScoreRead `json:"reads,omitempty"`
}

func (ScoreRecorded) EventType() string  { return TypeScoreRecorded }
func (ScoreRecorded) EventVersion() int  { return 1 }
func (e ScoreRecorded) StreamID() string { return ExperimentStream(e.Experiment) }
func (e ScoreRecorded) Validate() error {
	if e.Experiment == "" || e.Item == "" || e.Scorer == "" {
		return invalid("score.recorded needs an experiment, an item and a scorer")
	}
	if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
		return invalid("score.recorded value is not a finite number")
	}
	for _, r := range e.Reads {
		if r.Seq <= 0 || r.Leaf == "" {
			return invalid("score.recorded read needs a seq and a leaf hash")
		}
	}
	return nil
}

// TypeCounterfactualForked records what a counterfactual run replaced.
const TypeCounterfactualForked = "counterfactual.forked"

// CounterfactualStream is the stream of the counterfactual.forked event of
// one counterfactual run, by the run's id.
func CounterfactualStream(run string) string { return "counterfactual:" + run }

// Kinds of replaced event (CounterfactualForked.Kind).
const (
	ReplacedAnswer     = "answer"      // a model's answer (provider.called)
	ReplacedToolResult = "tool_result" // a tool's output (tool.returned)
)

// CounterfactualForked opens a counterfactual run: Run continues Original
// from the event at seq At (leaf hash Replaced), which it replaced by the
// blob Replacement, on the fork Session. It is written with Run's
// run.started, in the same commit, and verify checks Replaced against the
// log's event at At.
type CounterfactualForked struct {
	Run         string `json:"run"`
	Original    string `json:"original"`
	At          int64  `json:"at"`
	Kind        string `json:"kind"`
	Replaced    string `json:"replaced"`
	Replacement string `json:"replacement"`
	Session     string `json:"session"`
}

func (CounterfactualForked) EventType() string  { return TypeCounterfactualForked }
func (CounterfactualForked) EventVersion() int  { return 1 }
func (e CounterfactualForked) StreamID() string { return CounterfactualStream(e.Run) }
func (e CounterfactualForked) Validate() error {
	if e.Run == "" || e.Original == "" || e.At <= 0 || e.Replaced == "" || e.Replacement == "" || e.Session == "" {
		return invalid("counterfactual.forked needs the run, the original, the replaced seq and leaf hash, the replacement and the fork")
	}
	if e.Kind != ReplacedAnswer && e.Kind != ReplacedToolResult {
		return invalid("counterfactual.forked kind %q is not %s or %s", e.Kind, ReplacedAnswer, ReplacedToolResult)
	}
	return nil
}
