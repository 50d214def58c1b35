package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/flow"
)

// scoreView is one score as `rath score --json` and `rath experiments
// show` print it.
type scoreView struct {
	Seq           int64   `json:"seq"`
	Item          string  `json:"item"`
	Run           string  `json:"run"`
	Scorer        string  `json:"scorer"`
	ScorerVersion string  `json:"scorer_version"`
	ConfigHash    string  `json:"config_hash"`
	Value         float64 `json:"value"`
	Reason        string  `json:"reason,omitempty"`
	Reads         []int64 `json:"reads"`
}

func scoreViewOf(s eval.Score) scoreView {
	v := scoreView{Seq: s.Seq, Item: s.Item, Run: s.Run, Scorer: s.Scorer, ScorerVersion: s.Version, ConfigHash: s.ConfigHash,
		Value: s.Value, Reason: s.Reason, Reads: []int64{}}
	for _, r := range s.Reads {
		v.Reads = append(v.Reads, r.Seq)
	}
	return v
}

type scoreResultView struct {
	Experiment string            `json:"experiment"`
	Dataset    string            `json:"dataset"`
	ModelCalls int64             `json:"model_calls"`
	Means      []eval.ScorerMean `json:"means"`
	Scores     []scoreView       `json:"scores"`
	Skipped    []string          `json:"skipped,omitempty"`
}

func newScoreCmd(a *app) *cobra.Command {
	var specs []string
	var experiment string
	var liveJudge bool
	cmd := &cobra.Command{
		Use:   "score DATASET --scorer SPEC ... [--experiment NAME] [--live-judge]",
		Short: "Score a dataset's recorded runs; each score is a score.recorded event bound to the events it read",
		Long: `score scores every item of the dataset that has a recorded run with each
--scorer, and records each score as a score.recorded event of the
experiment (--experiment, default DATASET-N): the item, the scorer's
name, version and config hash, the value, the reason, and the seqs and
leaf hashes of the events it read, which rath verify checks.
Scorers: ` + eval.Specs + `.
A judge file is {"prompt": "... {{input}} {{output}} {{ideal}} ...",
"provider": NAME or {"kind", "base_url", "model", "api_key_env"}} (a
provider as in the config file); the judge answers with JSON {"score":
0..1, "reason": "..."}. Its call is recorded, so scoring again with the
same judge answers from the record: the same score, no model call.
--live-judge asks the model again. The last line says how many model
calls the command made.`,
		Example: "rath score smoke --scorer contains:Paris --scorer no_tool_error --experiment baseline\nrath score smoke --scorer judge:judge.json --json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(specs) == 0 {
				return usagef(cmd, "give at least one --scorer SPEC (%s)", eval.Specs)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			opts := eval.SpecOptions{Judge: eval.JudgeOptions{Runtime: rt, Live: liveJudge, ConfigPath: flow.DefaultConfigPath(os.Getenv)}}
			scorers := make([]eval.Scorer, 0, len(specs))
			for _, spec := range specs {
				sc, err := eval.ParseSpec(spec, opts)
				if err != nil {
					return usagef(cmd, "--scorer: %v", err)
				}
				scorers = append(scorers, sc)
			}
			ds, err := eval.LoadDataset(ctx, rt, argv[0])
			if err != nil {
				return err
			}
			res, err := eval.ScoreDataset(ctx, rt, ds, scorers, eval.ScoreOptions{Experiment: experiment})
			if err != nil {
				return err
			}
			x, err := eval.LoadExperiment(ctx, rt, res.Experiment)
			if err != nil {
				return err
			}
			if a.json {
				v := scoreResultView{Experiment: res.Experiment, Dataset: res.Dataset, ModelCalls: res.ModelCalls, Means: x.Means,
					Scores: []scoreView{}, Skipped: res.Skipped}
				for _, s := range res.Scores {
					v.Scores = append(v.Scores, scoreViewOf(s))
				}
				return a.printJSON(v)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ITEM\tSCORER\tVALUE\tREASON\tSEQ")
			for _, s := range res.Scores {
				fmt.Fprintf(tw, "%s\t%s\t%g\t%s\t%d\n", termSafe(s.Item), termSafe(s.Scorer), s.Value, clip(s.Reason, 70), s.Seq)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "experiment %s over dataset %s: %d scores\n", termSafe(res.Experiment), termSafe(res.Dataset), len(res.Scores))
			for _, m := range x.Means {
				fmt.Fprintf(a.stdout, "  %-30s mean %.3f over %d items\n", termSafe(m.Scorer), m.Mean, m.Items)
			}
			if len(res.Skipped) > 0 {
				fmt.Fprintf(a.stdout, "skipped %d items with no recorded run\n", len(res.Skipped))
			}
			fmt.Fprintf(a.stdout, "model calls: %d\n", res.ModelCalls)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&specs, "scorer", nil, "a scorer spec (repeatable): "+eval.Specs)
	cmd.Flags().StringVar(&experiment, "experiment", "", "the experiment to record into (default DATASET-N, the next free number)")
	cmd.Flags().BoolVar(&liveJudge, "live-judge", false, "ask judge models again instead of answering from their recorded calls")
	jsonFlag(cmd, a)
	return cmd
}
