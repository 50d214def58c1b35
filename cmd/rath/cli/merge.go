package cli

import (
	"fmt"

	"github.com/gorath/rath/session"
	"github.com/spf13/cobra"
)

func newMergeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "merge A B...",
		Short: "Merge sessions into a new one and print its id",
		Long: `merge creates a session whose chunks are A's, followed by each other
session's chunks after its common prefix with A. Its parents are A, B, ...
in order; placement comes from A and usage is summed.`,
		Example: "rath merge s-aaaaaaaaaaaaaaaaaaaa s-bbbbbbbbbbbbbbbbbbbb",
		Args:    args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			heads := make([]*session.Session, len(argv))
			for i, id := range argv {
				if heads[i], err = rt.Session(ctx, id); err != nil {
					return err
				}
			}
			m, err := heads[0].Merge(ctx, heads[1:]...)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(createdView{ID: m.ID(), Version: m.Version(), Chunks: m.Len(), Parents: m.Parents()})
			}
			_, err = fmt.Fprintln(a.stdout, m.ID())
			return err
		},
	}
	jsonFlag(cmd, a)
	return cmd
}
