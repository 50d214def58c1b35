package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/replay"
	"github.com/spf13/cobra"
)

// counterfactualSummary is what counterfactual --json prints.
type counterfactualSummary struct {
	Run         string `json:"run"`
	Original    string `json:"original"`
	At          int64  `json:"at"`
	Replaced    string `json:"replaced"`
	Replacement string `json:"replacement"`
	Session     string `json:"session"`
	Status      string `json:"status"`
	Output      string `json:"output_session,omitempty"`
	// NeedsLive is the request the record could not answer, when the run
	// stopped there (without --live).
	NeedsLive *replay.Divergence `json:"needs_live,omitempty"`
	Error     string             `json:"error,omitempty"`
}

func newCounterfactualCmd(a *app) *cobra.Command {
	var (
		at                 int64
		answer, toolResult string
		live               bool
	)
	cmd := &cobra.Command{
		Use:   "counterfactual RUN --at SEQ (--answer FILE | --tool-result FILE) [--live]",
		Short: "Fork a recorded run at a model answer or tool result, replace it, and continue as a new run",
		Long: `counterfactual forks RUN at SEQ, a recorded model answer (provider.called,
replaced by --answer) or tool result (tool.returned, replaced by
--tool-result), and continues the run's agent from there as a new run
linked to the original (parent_run). The fork references the original's
events and copies none of them. The new run records what was replaced, in
a counterfactual.forked event written with its run.started (and in its
parameters counterfactual_of, counterfactual_at, counterfactual_replaced,
counterfactual_replacement): the original run, the seq and leaf hash of
the replaced event, the replacement's blob hash and the fork. rath verify
checks the leaf hash against the log; rath show FORK says what the
session is a counterfactual of. The run must be of one agent: a workflow
of several agents is refused (exit 1), since its middle cannot be
continued on its own.

--answer FILE holds the model's answer: JSON {"content": …, "tool_calls":
[{"id", "name", "arguments"}]}, or plain text taken as the content.
--tool-result FILE holds the tool's output text.

After the replacement, calls are answered from the original's record while
the requests match. The first request that differs needs a live answer:
with --live it and all that follows go to the configured provider and the
tools run; without, the new run stops there (exit 4) and says so.`,
		Example: `rath counterfactual run-0123456789abcdef --at 42 --answer answer.json
rath counterfactual run-0123456789abcdef --at 57 --tool-result out.txt --live`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rep, err := readReplacement(cmd, answer, toolResult)
			if err != nil {
				return err
			}
			if at <= 0 {
				return usagef(cmd, "--at SEQ: the seq of the model answer or tool result to replace (rath events --run %s)", argv[0])
			}
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			mode := rath.ReplayMode
			if live {
				mode = rath.LiveMode
			}
			wf, err := a.workflowForRun(ctx, rt, argv[0], mode)
			if err != nil {
				return err
			}
			if _, ok := wf.(*flow.Agent); !ok {
				// Refused before the fork is made.
				started, err := rt.RunStarted(ctx, argv[0])
				if err != nil {
					return err
				}
				return &replay.NotOneAgentError{Run: argv[0], Workflow: started.Workflow}
			}
			cf, err := replay.NewCounterfactual(ctx, rt, argv[0], at, rep)
			if err != nil {
				return err
			}
			run, runErr := cf.Continue(ctx, rt, wf, live)
			sum := counterfactualSummary{Original: cf.Run, At: cf.Seq, Replaced: cf.Replaced, Replacement: cf.Replacement, Session: cf.Session.ID(), Status: "failed"}
			if run != nil {
				sum.Run = run.ID
				if run.Output != nil {
					sum.Output = run.Output.ID()
				}
				if row, err := rt.Reader().Run(ctx, run.ID); err == nil {
					sum.Status = jsonview.StatusWord(row.Status)
				}
			}
			var d *replay.Divergence
			if errors.As(runErr, &d) && d.Unanswered {
				sum.NeedsLive = d
			} else if runErr != nil {
				sum.Error = runErr.Error()
			}
			if a.json {
				if err := a.printJSON(sum); err != nil {
					return err
				}
			} else {
				printCounterfactual(a, sum)
			}
			if sum.NeedsLive != nil {
				return fmt.Errorf("%w: the counterfactual needs live answers from seq %d on (--live goes on against the configured provider)", errDiverged, d.Seq)
			}
			return runErr
		},
	}
	cmd.Flags().Int64Var(&at, "at", 0, "the seq of the recorded model answer (provider.called) or tool result (tool.returned) to replace")
	cmd.Flags().StringVar(&answer, "answer", "", "a file holding the model's answer: JSON {\"content\", \"tool_calls\"} or plain text")
	cmd.Flags().StringVar(&toolResult, "tool-result", "", "a file holding the tool's output text")
	cmd.Flags().BoolVar(&live, "live", false, "answer changed requests with the configured provider and run the tools, instead of stopping there")
	jsonFlag(cmd, a)
	return cmd
}

// readReplacement reads --answer or --tool-result (exactly one).
func readReplacement(cmd *cobra.Command, answer, toolResult string) (replay.Replacement, error) {
	var rep replay.Replacement
	if (answer == "") == (toolResult == "") {
		return rep, usagef(cmd, "give one of --answer FILE and --tool-result FILE")
	}
	file := answer + toolResult
	b, err := os.ReadFile(file)
	if err != nil {
		return rep, usagef(cmd, "read %s: %v", file, err)
	}
	if toolResult != "" {
		rep.ToolResult = &replay.ToolResult{Content: string(b)}
		return rep, nil
	}
	var resp model.Response
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&resp); err != nil {
			return rep, usagef(cmd, "--answer %s: not an answer {\"content\", \"tool_calls\"}: %v", file, err)
		}
		for i, tc := range resp.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return rep, usagef(cmd, "--answer %s: tool call %d needs an id and a name", file, i)
			}
		}
	} else {
		resp.Content = string(b)
	}
	rep.Answer = &resp
	return rep, nil
}

func printCounterfactual(a *app, s counterfactualSummary) {
	tw := &termWriter{w: a.stdout}
	defer tw.Flush()
	fmt.Fprintf(tw, "counterfactual of %s at seq %d: replaced %.16s by %.16s\n", s.Original, s.At, s.Replaced, s.Replacement)
	fmt.Fprintf(tw, "fork: %s\n", s.Session)
	if s.NeedsLive != nil {
		fmt.Fprintf(tw, "needs live answers at seq %d: %s\n", s.NeedsLive.Seq, s.NeedsLive.Hint)
	}
	if s.Error != "" {
		fmt.Fprintf(tw, "error: %s\n", s.Error)
	}
	fmt.Fprintf(tw, "run: %s (%s)\n", s.Run, s.Status)
	if s.Output != "" {
		fmt.Fprintf(tw, "session: %s\n", s.Output)
	}
}
