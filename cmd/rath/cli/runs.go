package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/internal/jsonview"
)

type runView = jsonview.Run

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
				views[i] = jsonview.RunOf(r, worker[r.ID])
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
