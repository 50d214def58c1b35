package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath"
)

type runView struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Status   string `json:"status"`
	Input    string `json:"input_session,omitempty"`
	Output   string `json:"output_session,omitempty"`
	Parent   string `json:"parent_run,omitempty"`
	Started  string `json:"started_at"`
	FirstSeq int64  `json:"started_seq"`
	LastSeq  int64  `json:"finished_seq,omitempty"`
	Error    string `json:"error,omitempty"`
	// Worker holds (or last held) the run's lease on the worker fleet.
	Worker string `json:"worker,omitempty"`
}

// statusWord is how runs and wait name a run's status: the log records
// a finished run as ok or error, an operator reads done or failed.
func statusWord(status string) string {
	switch status {
	case rath.RunOK:
		return "done"
	case rath.RunError:
		return "failed"
	}
	return status
}

func newRunsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "List recorded runs: workflow, status (queued, running, waiting, done, failed, canceled), input and output sessions, worker",
		Example: "rath runs --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			rows, err := rt.Reader().Runs(ctx)
			if err != nil {
				return err
			}
			leases, err := rt.Reader().Leases(ctx)
			if err != nil {
				return err
			}
			worker := map[string]string{}
			for _, l := range leases {
				worker[l.Run] = l.Worker
			}
			views := make([]runView, len(rows))
			for i, r := range rows {
				views[i] = runView{ID: r.ID, Workflow: r.Workflow, Status: statusWord(r.Status), Input: r.InputSession, Output: r.OutputSession,
					Parent: r.ParentRun, Started: time.Unix(0, r.StartedAt).UTC().Format(time.RFC3339), FirstSeq: r.StartedSeq,
					LastSeq: r.FinishedSeq.Int64, Error: r.Error, Worker: worker[r.ID]}
			}
			if a.json {
				return a.printJSON(views)
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTARTED\tINPUT\tOUTPUT\tPARENT\tWORKER")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Workflow, v.Status, v.Started, orDash(v.Input), orDash(v.Output), orDash(v.Parent), orDash(v.Worker))
			}
			return tw.Flush()
		},
	}
	jsonFlag(cmd, a)
	return cmd
}
