package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newSessionsCmd(a *app) *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:     "sessions",
		Short:   "List sessions: id, kind, chunks, version, backend, parents, tokens",
		Example: "rath sessions --json\nrath sessions --run run-1a2b",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			rows, err := rt.Reader().Sessions(ctx)
			if err != nil {
				return err
			}
			if run != "" {
				set, err := runSessions(ctx, rt, run)
				if err != nil {
					return err
				}
				rows = sessionsOfRun(rows, set)
			}
			parents, err := parentsByChild(ctx, rt.Reader())
			if err != nil {
				return err
			}
			views := make([]sessionView, len(rows))
			for i, r := range rows {
				views[i] = newSessionView(r, parents[r.ID])
			}
			if a.json {
				return a.printJSON(views)
			}
			anyIncomplete := false
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tCHUNKS\tVERSION\tBACKEND\tPARENTS\tTOKENS")
			for _, v := range views {
				kind := v.Kind
				if v.Incomplete {
					kind += "*"
					anyIncomplete = true
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d\n", v.ID, kind, v.Chunks, v.Version,
					orDash(v.Backend), orDash(strings.Join(v.Parents, ",")), v.Usage.TotalTokens)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(views) == 0 {
				fmt.Fprintln(a.stderr, "no sessions")
			}
			if anyIncomplete {
				fmt.Fprintln(a.stderr, "* incomplete: imported from a file without a trailer (its writer stopped early)")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only this run's sessions: its input and those it created")
	jsonFlag(cmd, a)
	return cmd
}
