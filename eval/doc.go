// Package eval scores recorded runs and keeps the scores as evidence.
//
// # What it owns
//
//   - Datasets ([Dataset], [Item]): named sets of recorded runs, each item
//     pinning its run, the run's input session and the leaf hash of the
//     run's last event, or cases with no recording yet (from JSONL, in the
//     shape OpenAI's evals use). [CreateFromRuns], [CreateFromJSONL],
//     [LoadDataset], [ListDatasets].
//   - Scorers ([Scorer]): a name, a version and Score. [ParseSpec] builds
//     the built-in ones from their command-line specs (exact:, contains:,
//     regex:, json_schema:, tool_called:, no_tool_error, max_tokens:,
//     max_latency:, judge:). A judge's model call is a provider call
//     recorded on the log; scoring again with the same judge answers from
//     the record, so its verdict is the same and no model is called.
//   - Scores as evidence: [RecordScores] and [ScoreDataset] append one
//     score.recorded event per item and scorer, naming the scorer's
//     identity and the leaf hashes of the events it read; [VerifyScores]
//     checks those hashes against the log.
//   - Experiments: [ListExperiments] and [Compare] (per scorer means, per
//     item deltas, the items that flipped).
//
// # Streams
//
// A dataset is the stream "dataset:NAME" (dataset.created, then one
// dataset.item_added per item), an experiment the stream
// "experiment:NAME" (experiment.started, then its score.recorded events),
// and a judge's recorded calls the stream "judge:DIGEST", DIGEST being the
// SHA-256 of the judge's request: the record a re-score answers from.
// Event payloads are in package events (events/types_eval.go).
//
// # What it does not own
//
// Regression by replay and counterfactual forks (regress*.go,
// counterfactual*.go) build on the datasets and on [RecordScores].
package eval
