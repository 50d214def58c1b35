package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/flow"
	"github.com/spf13/cobra"
)

// errRegressed makes regress --fail-on-regression exit ExitDiverged after
// its report is printed.
var errRegressed = fmt.Errorf("%w: a run of the regression check is not the same as its record", errDiverged)

func newRegressCmd(a *app) *cobra.Command {
	var (
		runs    []string
		live    bool
		failOn  bool
		expName string
		specs   []string
		workers int
		tol     float64
	)
	cmd := &cobra.Command{
		Use:   "regress (DATASET | --run RUN...) [--live [--experiment NAME --scorer SPEC... [--tolerance T]]] [--parallel N] [--fail-on-regression]",
		Short: "Re-execute recorded runs with the workflow as it is now, answered from the record while requests match, and say per run where it first differs",
		Long: `regress re-executes each recorded run of DATASET (or each --run) in a
scratch store with the workflow as it is now: for "rath run" runs, this
binary's agent with the recorded provider and, for a run of a named agent
(--agent), the config file's agents as they are now; for a program's
workflows, the program's code (a binary built on package
github.com/gorath/rath/cmd/rath/cli); otherwise the recorded spec. Model
and tool calls are answered from the record while the requests match.

Per run it prints "same", or "diverged at seq S" with what differed (a
model request, a tool call or result, the transcript) and whether the
difference is structural (another tool, other arguments, other messages
or settings) or wording (the same structure, other text), and "needs live
answers" when the run made a request the record has no answer for. With
--live such a run goes on against the configured provider as a new run
linked to the baseline (parent_run), and the new run's id is printed.

Runs are re-executed --parallel at a time (by default as many as the
machine runs goroutines at once), each in its own scratch store; the
report lists them in the dataset's (or the --run flags') order.

With --experiment NAME and --scorer SPEC over a dataset, each run that
went on live is scored in NAME beside its baseline: the score NAME holds
of the item's recorded run by the same scorer (scored now if it holds
none). A live run's score lower than the baseline's by more than
--tolerance (default 0) has fallen, and the report names it.

With --fail-on-regression it exits 4 when any run is not the same (or
could not be re-executed) or a score fell, naming the items whose score
fell.`,
		Example: `rath regress --run run-0123456789abcdef --run run-fedcba9876543210
rath regress --fail-on-regression --json --run run-0123456789abcdef`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if len(argv) == 0 && len(runs) == 0 {
				return usagef(cmd, "name a dataset or give --run RUN")
			}
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			var ds *eval.Dataset
			if len(argv) == 1 {
				if ds, err = eval.LoadDataset(ctx, rt, argv[0]); err != nil {
					return err
				}
			}
			var scorers []eval.Scorer
			for _, spec := range specs {
				sc, err := eval.ParseSpec(spec, eval.SpecOptions{})
				if err != nil {
					return usagef(cmd, "--scorer %s: %v", spec, err)
				}
				scorers = append(scorers, sc)
			}
			if len(scorers) > 0 && (ds == nil || expName == "") {
				return usagef(cmd, "--scorer scores the runs that went on live in --experiment NAME over DATASET: give both")
			}
			if cmd.Flags().Changed("tolerance") && (len(scorers) == 0 || tol < 0) {
				return usagef(cmd, "--tolerance %g: give 0 or more, with --scorer (how far a live run's score may fall below the baseline's)", tol)
			}
			var cases []eval.RegressCase
			for _, r := range runs {
				cases = append(cases, eval.RegressCase{Run: r})
			}
			if workers < 1 {
				return usagef(cmd, "--parallel %d: give 1 or more runs at once", workers)
			}
			opts := eval.RegressOptions{
				Parallel: workers,
				Workflow: func(ctx context.Context, run string) (flow.Workflow, error) {
					return a.workflowNow(ctx, rt, run, false)
				},
			}
			if live {
				opts.Live = func(ctx context.Context, run string) (flow.Workflow, error) { return a.workflowNow(ctx, rt, run, true) }
			}
			if progress := a.progress("regress"); progress != nil {
				opts.Progress = func(done, total int) { progress(int64(done), int64(total)) }
			}
			opts.Experiment, opts.Scorers, opts.Tolerance = expName, scorers, tol
			var rep *eval.RegressReport
			if ds != nil {
				rep, err = eval.RegressDataset(ctx, rt, ds, opts)
			} else {
				rep, err = eval.Regress(ctx, rt, cases, opts)
			}
			if err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				printRegress(a, rep)
			}
			if !failOn || !rep.Regressed() {
				return nil
			}
			if err := rep.FellError(); err != nil {
				return fmt.Errorf("%w: %w", errDiverged, err)
			}
			return errRegressed
		},
	}
	cmd.Flags().StringArrayVar(&runs, "run", nil, "a recorded run to check (repeatable)")
	cmd.Flags().BoolVar(&live, "live", false, "go on against the configured provider where a run needs live answers, as a new run linked to the baseline")
	cmd.Flags().IntVar(&workers, "parallel", runtime.GOMAXPROCS(0), "how many runs to re-execute at once; the report keeps their order")
	cmd.Flags().BoolVar(&failOn, "fail-on-regression", false, "exit 4 when a run is not the same as its record")
	cmd.Flags().StringVar(&expName, "experiment", "", "with --live and --scorer: the experiment the runs that went on live are scored in")
	cmd.Flags().StringArrayVar(&specs, "scorer", nil, "a scorer of the runs that went on live ("+eval.Specs+"); repeatable")
	cmd.Flags().Float64Var(&tol, "tolerance", 0, "with --scorer: how far a live run's score may fall below the baseline's before --fail-on-regression fails")
	jsonFlag(cmd, a)
	return cmd
}

func printRegress(a *app, rep *eval.RegressReport) {
	tw := &termWriter{w: a.stdout}
	defer tw.Flush()
	for _, it := range rep.Items {
		name := it.Run
		if it.Item != "" {
			name = it.Item + " " + it.Run
		}
		// A divergence quotes model text and tool output: termWriter
		// escapes it.
		fmt.Fprintf(tw, "%s: %s\n", name, it.Verdict())
		if d := it.Divergence; d != nil {
			fmt.Fprintf(tw, "  %s\n", d.Hint)
			if d.Diff != "" {
				fmt.Fprintf(tw, "  %s\n", d.Diff)
			}
		}
		for i, sc := range it.Scores {
			fmt.Fprintf(tw, "  live run scored %s = %g", sc.Scorer, sc.Value)
			if i < len(it.Baseline) {
				fmt.Fprintf(tw, " (baseline %g)", it.Baseline[i].Value)
			}
			fmt.Fprintln(tw)
		}
		if it.LiveError != "" {
			fmt.Fprintf(tw, "  live: %s\n", it.LiveError)
		}
	}
	fmt.Fprintf(tw, "%d runs: %d same, %d diverged, %d need live answers, %d could not be re-executed\n",
		len(rep.Items), rep.Same, rep.Diverged, rep.NeedsLive, rep.Errors)
	if falls := rep.Falls(); len(falls) > 0 {
		fmt.Fprintf(tw, "%d scores fell by more than %g below the baseline's:\n", len(falls), rep.Tolerance)
		for _, f := range falls {
			fmt.Fprintf(tw, "  score fell: %s\n", f)
		}
	}
	if rep.Unrecorded > 0 {
		fmt.Fprintf(tw, "%d items of the dataset have no recorded run: nothing to re-execute\n", rep.Unrecorded)
	}
}

// workflowNow returns the workflow run would run today: for a "rath run"
// run of a named agent, the config file's agent as it is now (its system
// prompt) with the recorded provider (live: today's); otherwise what
// replay (live: resume) rebuilds.
func (a *app) workflowNow(ctx context.Context, rt *rath.Runtime, run string, live bool) (flow.Workflow, error) {
	mode := rath.ReplayMode
	if live {
		mode = rath.LiveMode
	}
	row, err := rt.Reader().Run(ctx, run)
	if err != nil {
		return a.workflowForRun(ctx, rt, run, mode)
	}
	if _, err := rt.Workflow(row.Workflow); err == nil || row.Workflow != runWorkflow {
		return a.workflowForRun(ctx, rt, run, mode)
	}
	started, err := rt.RunStarted(ctx, run)
	if err != nil {
		return nil, err
	}
	name := started.Params[rath.ParamAgent]
	if name == "" {
		return a.workflowForRun(ctx, rt, run, mode)
	}
	params := maps.Clone(started.Params)
	if params[rath.ParamSystem], err = namedAgentSystem(name); err != nil {
		return nil, fmt.Errorf("run %s: %w", run, err)
	}
	// A run of a named agent records its provider (flow.ProviderParam):
	// --agent is newer than that record, so replay needs nothing more.
	wf, err := rt.BuildWorkflow(ctx, rath.AgentWorkflow, params, mode)
	if errors.Is(err, flow.ErrNoProviderKind) {
		return nil, fmt.Errorf("run %s: %w", run, err)
	}
	return wf, err
}
