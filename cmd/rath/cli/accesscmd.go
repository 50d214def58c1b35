package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
	"github.com/spf13/cobra"
)

func newAccessCmd(a *app) *cobra.Command {
	var run, who, since, tenant string
	var limit int
	cmd := &cobra.Command{
		Use:   "access [--run RUN] [--who SUBJECT] [--tenant T] [--since D]",
		Short: "Who read what: the access records of run content read through the console or its API",
		Long: `access lists the access.viewed records, oldest first: who read (subject and
issuer), for which tenant, what (a run's events, transcript, model call,
tool results, dossier; or a memory namespace), which seqs, through which
route and when. The records are events in the hash-chained log.`,
		Example: "rath access --run run-1a2b\nrath access --who alice@example.com --since 7d\nrath access --tenant acme --since 1d\nrath access --run run-1a2b --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := events.CheckTenant(tenant); err != nil {
				return usagef(cmd, "--tenant: %v", err)
			}
			f := access.Filter{Run: run, Who: who, Tenant: tenant, Limit: limit}
			if since != "" {
				t, err := parseAge(since, time.Now())
				if err != nil {
					return usagef(cmd, "--since %v", err)
				}
				f.Since = t
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			rs, err := access.Records(ctx, rt.Store().DB(), f)
			if err != nil {
				return err
			}
			if a.json {
				if rs == nil {
					rs = []access.AccessRecord{}
				}
				return a.printJSON(rs)
			}
			if len(rs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no access records")
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tAT\tWHO\tTENANT\tWHAT\tREAD\tROUTE")
			for _, r := range rs {
				read := r.Run
				if r.Namespace != "" {
					read = "memory " + r.Namespace
				}
				switch {
				case r.FromSeq > 0 && r.ToSeq == 0:
					read += fmt.Sprintf(" seq %d-", r.FromSeq)
				case r.FromSeq > 0:
					read += fmt.Sprintf(" seq %d-%d", r.FromSeq, r.ToSeq)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.At.Format(time.RFC3339), termSafe(r.Who), orDash(termSafe(r.Tenant)),
					r.What, termSafe(read), termSafe(r.Route))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only reads of this run")
	cmd.Flags().StringVar(&tenant, "tenant", "", "only reads of this tenant's runs and memory")
	cmd.Flags().StringVar(&who, "who", "", "only reads by this subject (alice@example.com, token:ID, os:USER)")
	cmd.Flags().StringVar(&since, "since", "", "only reads since: 7d, 12h, a date or an RFC 3339 time")
	cmd.Flags().IntVar(&limit, "limit", 0, "only the newest N (default: all)")
	jsonFlag(cmd, a)
	return cmd
}
