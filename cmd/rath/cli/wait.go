package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/jsonview"
	"github.com/spf13/cobra"
)

// errRunsEnded is matched by the error of a wait in which a run failed
// or was canceled; the message says which and why.
var errRunsEnded = errors.New("not every run is done")

// errTimedOut is matched by the error of a wait whose --timeout passed
// with runs still going (exit code ExitTimedOut): none of them failed.
var errTimedOut = errors.New("timed out")

func newWaitCmd(a *app) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait RUN...",
		Short: "Wait until runs end or wait for a person; exit 1 if any failed or was canceled, 5 if any waits, 7 on --timeout",
		Long: `wait blocks until each run has ended (done, failed or canceled) or waits for
a person, and prints each run's status. A run that waits for a person
does not continue by itself: wait prints its requests and how to decide
them on stderr and exits with code 5 (a fleet worker takes a submitted
run up again once it is decided; run "rath wait" again to follow it).
A failed run exits 1 with its error, a canceled one with its reason.
A --timeout that passes with runs still going exits 7: none failed.`,
		Example: "rath wait run-1a2b run-3c4d --timeout 10m",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, runs []string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			for _, id := range runs {
				if _, err := rt.Reader().Run(ctx, id); err != nil {
					return fmt.Errorf("run %s: %w", id, err)
				}
			}
			ended, err := fleet.WaitEndings(ctx, rt, fleet.WaitOptions{StopAtWaiting: true}, runs...)
			status := make(map[string]string, len(ended))
			for id, r := range ended {
				status[id] = jsonview.StatusWord(r.Status)
			}
			if a.json {
				if perr := a.printJSON(status); perr != nil {
					return perr
				}
			} else {
				for _, id := range runs {
					if st, ok := status[id]; ok {
						fmt.Fprintf(a.stdout, "%s\t%s\n", id, st)
					}
				}
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("wait: %w: --timeout %s passed with runs still going", errTimedOut, timeout)
			}
			if err != nil && !errors.Is(err, fleet.ErrRunFailed) {
				return err
			}
			var bad, waiting []string
			for _, id := range runs {
				r := ended[id]
				switch r.Status {
				case rath.RunOK:
				case fleet.StatusWaiting:
					waiting = append(waiting, id)
				case fleet.StatusCanceled:
					bad = append(bad, fmt.Sprintf("run %s was canceled: %s", id, orDash(r.Reason)))
				default:
					bad = append(bad, fmt.Sprintf("run %s %s: %s", id, jsonview.StatusWord(r.Status), orDash(r.Reason)))
				}
			}
			for _, id := range waiting {
				a.printWaiting(ctx, rt, id, &termWriter{w: a.stderr})
			}
			if len(bad) > 0 {
				return fmt.Errorf("%w: %s", errRunsEnded, strings.Join(bad, "; "))
			}
			if len(waiting) > 0 {
				return fmt.Errorf("%w: %s", flow.ErrWaiting, strings.Join(waiting, " "))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait as long as it takes)")
	jsonFlag(cmd, a)
	return cmd
}
