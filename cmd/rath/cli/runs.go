package cli

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/projections"
)

type runView = jsonview.Run

// statusWords is the one status vocabulary of runs, in the text and
// JSON output of every command and in --status.
var statusWords = []string{"queued", "running", "waiting", "done", "failed", "canceled"}

func newRunsCmd(a *app) *cobra.Command {
	var status []string
	var since, search string
	var limit int
	var all, quiet bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List recorded runs: workflow, status (queued, running, waiting, done, failed, canceled), input and output sessions, worker",
		Long: `runs lists the recorded runs, newest first: workflow, status, start time,
input and output sessions, parent run, worker. --status keeps runs with
one of the given statuses, --since those started within a duration (1h)
or after a time (2026-11-25 or RFC 3339), --search those whose id,
workflow, input or output session or error holds the text; of what is
left, the newest
--limit (default 20) are listed, or every one with --all. -q prints the
run ids only, one a line.`,
		Example: "rath runs --status failed,canceled --since 24h\nrath runs -q --status waiting\nrath runs --search timeout --all --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, st := range status {
				if !slices.Contains(statusWords, st) {
					return usagef(cmd, "--status %q: want some of %s", st, strings.Join(statusWords, ", "))
				}
			}
			if limit < 1 {
				return usagef(cmd, "--limit %d: want 1 or more (--all lists every run)", limit)
			}
			if all && cmd.Flags().Changed("limit") {
				return usagef(cmd, "--all and --limit: give one")
			}
			after, err := parseSince(since, time.Now())
			if err != nil {
				return usagef(cmd, "--since: %v", err)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			f := projections.RunsFilter{Text: search}
			for _, st := range status {
				f.Statuses = append(f.Statuses, jsonview.StatusStored(st))
			}
			if !after.IsZero() {
				f.StartedAfter = clampedUnixNano(after)
			}
			n := limit
			if all {
				n = 0
			}
			rows, total, err := rt.Reader().RunsNewest(ctx, f, n)
			if err != nil {
				return err
			}
			ids := make([]string, len(rows))
			for i, r := range rows {
				ids[i] = r.ID
			}
			leases, err := rt.Reader().LeasesOf(ctx, ids)
			if err != nil {
				return err
			}
			worker := map[string]string{}
			for _, l := range leases {
				worker[l.Run] = l.Worker
			}
			views := make([]runView, 0, len(rows))
			for _, r := range rows {
				views = append(views, jsonview.RunOf(r, worker[r.ID]))
			}
			if total > len(views) {
				fmt.Fprintf(a.stderr, "the newest %d of %s; --all lists every one\n", len(views), plural(total, "run"))
			}
			if a.json {
				return a.printJSON(views)
			}
			if quiet {
				for _, v := range views {
					fmt.Fprintln(a.stdout, v.ID)
				}
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTARTED\tINPUT\tOUTPUT\tPARENT\tWORKER")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Workflow, v.Status, v.Started, orDash(v.Input), orDash(v.Output), orDash(v.Parent), orDash(v.Worker))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&status, "status", nil, "only runs with these statuses (comma-separated): "+strings.Join(statusWords, ", "))
	cmd.Flags().StringVar(&since, "since", "", "only runs started within this duration (90m, 24h) or after this time (2026-11-25, RFC 3339)")
	cmd.Flags().StringVar(&search, "search", "", "only runs whose id, workflow, input or output session or error holds this text")
	cmd.Flags().IntVar(&limit, "limit", defaultRunsLimit, "list the newest N runs")
	cmd.Flags().BoolVar(&all, "all", false, "list every run (no --limit)")
	quietFlag(cmd, &quiet, "run")
	jsonFlag(cmd, a)
	return cmd
}

// defaultRunsLimit is how many runs `rath runs` lists without --limit or
// --all: a screenful, newest first.
const defaultRunsLimit = 20

// parseSince reads --since: a duration back from now, a date, or an RFC
// 3339 time. Empty is the zero time (no bound).
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now is positive", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a duration (90m, 24h), a date (2026-11-25) or an RFC 3339 time", s)
}

// clampedUnixNano is t in Unix nanoseconds, held to the range they
// reach (UnixNano is undefined beyond it): --since 2999-01-01 selects no
// run rather than a number that wrapped around.
func clampedUnixNano(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	}
	return t.UnixNano()
}
