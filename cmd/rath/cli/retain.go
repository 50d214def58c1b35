package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/retention"
	"github.com/gorath/rath/signkey"
)

func newRetainCmd(a *app) *cobra.Command {
	var before, as, keyPath string
	var o retention.Options
	cmd := &cobra.Command{
		Use:   "retain --completed-before AGE [--keep-last N] [--archive-to DIR] [--dry-run]",
		Short: "Archive finished runs, then delete their payloads from the store (leaves, tree and proofs kept)",
		Long: `retain selects the runs that finished (done or failed) before AGE ago (30d,
12h) or before a date, except the --keep-last newest finished runs and
runs already retained, and except any run whose sessions a live session
descends from (a fork or a continuation of its output). It never selects
a queued, running or waiting run.

With --archive-to it writes each run to DIR/RUN and checks the archive
before anything is deleted: with a signing key (--key or
RATH_SIGNING_KEY) as an attested run bundle (rath export --bundle's
format, verifiable without rath); without one, unsigned (its leaf lines,
the salts and payloads that open them, its blobs, inclusion proofs and
the tree head). Then it deletes
the payloads of those runs' events, all but run.started and run.finished
(so rath runs still lists them), in one redaction with reason
"retention" that rath verify lists, and rebuilds the projections. On
SQLite, VACUUM (sqlite3 rath.db 'VACUUM') returns the space to the file
system. --dry-run prints the runs and changes nothing.

Descendants are looked for again when the redaction commits: a run
forked from meanwhile is skipped and its archive removed. Archives are
written under DIR/.RUN.partial and renamed into place, so a retain
stopped at any point leaves no partial archive, and the next one starts
that run over.`,
		Example: "rath retain --completed-before 30d --keep-last 100 --archive-to /backup/rath",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := parseAge(before, time.Now())
			if err != nil {
				return usagef(cmd, "--completed-before: %v", err)
			}
			if o.KeepLast < 0 {
				return usagef(cmd, "--keep-last: want 0 or more, got %d", o.KeepLast)
			}
			o.CompletedBefore = t
			if as != "" {
				o.By = as
			}
			ctx := cmd.Context()
			if keyPath == "" {
				keyPath = os.Getenv("RATH_SIGNING_KEY")
			}
			if keyPath != "" && o.ArchiveTo != "" {
				key, err := signkey.Load(keyPath)
				if err != nil {
					return fmt.Errorf("retain: %w", err)
				}
				o.Archiver = retention.BundleArchiver{Key: key}
			}
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			rep, err := retention.Retain(ctx, rt, o)
			if err != nil {
				return err
			}
			if !o.DryRun && len(rep.Runs) > 0 {
				a.afterErasure(ctx, rt, postgresErasureNotice)
			}
			if a.json {
				return a.printJSON(rep)
			}
			verb := "retained"
			if o.DryRun {
				verb = "would retain"
			}
			for _, r := range rep.Runs {
				fmt.Fprintf(a.stdout, "%s %s\n", verb, r)
			}
			for _, s := range rep.Skipped {
				fmt.Fprintf(a.stdout, "skipped %s: %s\n", s.Run, termSafe(s.Reason))
			}
			switch {
			case o.DryRun:
				fmt.Fprintf(a.stdout, "%s would be retained (dry run: nothing changed)\n", plural(len(rep.Runs), "run"))
			case len(rep.Runs) == 0:
				fmt.Fprintln(a.stdout, "nothing to retain")
			default:
				archived := "not archived"
				if o.ArchiveTo != "" {
					archived = fmt.Sprintf("archived %d bytes to %s", rep.ArchivedBytes, o.ArchiveTo)
				}
				fmt.Fprintf(a.stdout, "%s %s; deleted %d payload bytes and %s of %d bytes (redaction at seq %d)\n",
					plural(len(rep.Runs), "run"), archived, rep.PayloadBytes, plural(int(rep.Blobs), "blob"), rep.BlobBytes, rep.RecordSeq)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&before, "completed-before", "", "runs that finished more than this long ago (30d, 12h) or before this date (required)")
	cmd.Flags().IntVar(&o.KeepLast, "keep-last", 0, "keep the N most recently finished runs whenever they finished")
	cmd.Flags().StringVar(&o.ArchiveTo, "archive-to", "", "archive each run into DIR/RUN before deleting its payloads")
	cmd.Flags().StringVar(&keyPath, "key", "", "signing key file: archive each run as an attested bundle (default $RATH_SIGNING_KEY; without a key, an unsigned archive)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would be retained and change nothing")
	cmd.Flags().StringVar(&as, "as", "", "who retains (recorded; default \"rath retain\")")
	_ = cmd.MarkFlagRequired("completed-before")
	jsonFlag(cmd, a)
	return cmd
}

// parseAge reads --completed-before: a number of days (30d), a duration
// (12h), a date or an RFC 3339 time.
func parseAge(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("%q: want a number of days (30d)", s)
		}
		return now.AddDate(0, 0, -n), nil
	}
	t, err := parseSince(s, now)
	if err == nil && t.IsZero() {
		err = fmt.Errorf("an age or a date is required")
	}
	return t, err
}
