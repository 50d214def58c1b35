package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/spf13/cobra"
)

func newMigrateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "migrate",
		Short:   "Schema migrations of the store",
		Example: "rath migrate status",
		Args:    args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) > 0 {
				return usagef(cmd, "unknown migrate command %q", argv[0])
			}
			return cmd.Help()
		},
	}
	status := &cobra.Command{
		Use:     "status",
		Short:   "List the schema migrations and whether each is applied",
		Example: "rath migrate status --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Opening the runtime would apply pending migrations; status
			// must report them as they are.
			if err := a.existing(); err != nil {
				return err
			}
			ms, err := rath.MigrationStatus(cmd.Context(), a.target())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(ms)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tSOURCE")
			for _, m := range ms {
				state := "pending"
				if m.Applied {
					state = "applied"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, state, orDash(m.AppliedAt), m.Source)
			}
			return tw.Flush()
		},
	}
	jsonFlag(status, a)
	up := &cobra.Command{
		Use:     "up",
		Short:   "Apply pending schema migrations (creating the store's tables if needed)",
		Example: "rath --dsn postgres://rath@db:5432/rath migrate up",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.dsn != "" && !events.IsPostgresDSN(a.dsn) {
				return usagef(cmd, "--dsn must be a postgres:// or postgresql:// URL")
			}
			if a.dsn == "" {
				if err := os.MkdirAll(a.dir, 0o755); err != nil {
					return err
				}
			}
			if err := rath.Migrate(cmd.Context(), a.target()); err != nil {
				return err
			}
			ms, err := rath.MigrationStatus(cmd.Context(), a.target())
			if err != nil {
				return err
			}
			var v int64
			for _, m := range ms {
				if m.Applied {
					v = m.Version
				}
			}
			fmt.Fprintf(a.stdout, "%s is at schema version %d\n", a.where(), v)
			return nil
		},
	}
	cmd.AddCommand(status, up)
	return cmd
}
