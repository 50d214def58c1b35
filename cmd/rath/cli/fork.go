package cli

import (
	"fmt"

	"github.com/gorath/rath/session"
	"github.com/spf13/cobra"
)

func newForkCmd(a *app) *cobra.Command {
	var at int64
	cmd := &cobra.Command{
		Use:   "fork ID",
		Short: "Fork a session (its head, or its state at --at SEQ) and print the new id",
		Example: `rath fork s-0123456789abcdef0123
rath fork s-0123456789abcdef0123 --at 42`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if cmd.Flags().Changed("at") && at <= 0 {
				return usagef(cmd, "--at must be a positive seq, got %d", at)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			var src *session.Session
			if at > 0 {
				src, err = rt.SessionAt(ctx, argv[0], at)
			} else {
				src, err = rt.Session(ctx, argv[0])
			}
			if err != nil {
				return err
			}
			f, err := src.Fork(ctx)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(createdView{ID: f.ID(), Version: f.Version(), Chunks: f.Len(), Parents: f.Parents()})
			}
			_, err = fmt.Fprintln(a.stdout, f.ID())
			return err
		},
	}
	cmd.Flags().Int64Var(&at, "at", 0, "fork the session as it was right after the event at this seq")
	jsonFlag(cmd, a)
	return cmd
}
