package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/spf13/cobra"
)

func newEventsCmd(a *app) *cobra.Command {
	var (
		q      eventlog.Query
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the event log, optionally filtered, optionally following new events",
		Long: `events prints stored events in seq order. With --json each event is one
JSON object per line (JSON Lines), payload included. With --follow it keeps
printing new events until interrupted.`,
		Example: `rath events --stream s-0123456789abcdef0123
rath events --from 100 --follow --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if q.FromSeq < 0 || q.Limit < 0 {
				return usagef(cmd, "--from and --limit must not be negative")
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			seq := rt.Store().Scan(ctx, q)
			if follow {
				if q.Limit > 0 {
					return usagef(cmd, "--limit and --follow do not go together")
				}
				seq = rt.Store().Subscribe(ctx, q)
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetEscapeHTML(false)
			for ev, err := range seq {
				if err != nil {
					return err
				}
				if a.json {
					if err := enc.Encode(ev); err != nil {
						return err
					}
					continue
				}
				if _, err := fmt.Fprintln(a.stdout, eventLine(ev)); err != nil {
					return err
				}
			}
			// Subscribe ends when the context is done: an interrupt is the
			// normal way to stop following.
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Stream, "stream", "", "only events of this stream (a session or run id)")
	f.StringVar(&q.RunID, "run", "", "only events produced by this run")
	f.StringSliceVar(&q.Types, "type", nil, "only events of these types (repeatable, like chunk.appended)")
	f.Int64Var(&q.FromSeq, "from", 0, "first seq to print")
	f.IntVar(&q.Limit, "limit", 0, "print at most this many events (0: all)")
	f.BoolVar(&follow, "follow", false, "keep printing new events until interrupted")
	jsonFlag(cmd, a)
	return cmd
}

// eventLine is the one-line text form of an event.
func eventLine(ev events.Event) string {
	run := ""
	if ev.RunID != "" {
		run = " run=" + ev.RunID
	}
	return fmt.Sprintf("%6d  %s  %s@%d  %s%s  %s", ev.Seq, ev.At.Format(time.RFC3339Nano), ev.Stream, ev.Version,
		ev.Type, run, clip(string(ev.Payload), 160))
}
