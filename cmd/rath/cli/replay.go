package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"

	"github.com/gorath/rath/replay"
	"github.com/spf13/cobra"
)

// errDiverged makes a diverged replay exit ExitDiverged after its report
// is printed.
var errDiverged = errors.New("the replay diverged from the record")

// errUnchecked makes a replay of a run with redacted events exit
// ExitUnchecked: it reproduced what it could check, not the whole run.
var errUnchecked = errors.New("the replay could not check the run's redacted or erased events")

func newReplayCmd(a *app) *cobra.Command {
	var liveTools bool
	cmd := &cobra.Command{
		Use:   "replay RUN",
		Short: "Re-execute a recorded run against its recorded model and tool answers and compare every event (exit 4 if it diverges, 6 if events of the run were redacted or erased)",
		Long: `replay re-executes a run's workflow in a scratch store. Every model call
and tool call is answered from the recorded events: no network, no side
effects. The events it produces are compared with the recorded ones,
wall-clock fields ignored. It prints how many events were reproduced, or
the first divergence with the recorded seq, both sides and a hint.

The workflow must be one this binary can rebuild: runs of "rath run", of
the demo, of the workflows a program built on package
github.com/gorath/rath/cmd/rath/cli registers in its Config.Setup, and of
any program whose workflow is made of flow's built-in layers (the run
records it as data). A workflow holding the program's own Go code is
refused (exit 1), naming the layer.`,
		Example: "rath replay run-0123456789abcdef",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			// A run whose subject was erased has no workflow to rebuild
			// and no answers to give: say which answers are gone.
			if rep, err := replay.ErasedRun(ctx, rt, argv[0]); err != nil || rep != nil {
				if err != nil {
					return err
				}
				return a.replayReport(rep)
			}
			wf, err := a.workflowForRun(ctx, rt, argv[0], rath.ReplayMode)
			if err != nil {
				return err
			}
			opts := []replay.Option{replay.WithProgress(a.progress("replay"))}
			if liveTools {
				opts = append(opts, replay.WithLiveTools())
			}
			rep, err := replay.Run(ctx, rt, argv[0], wf, opts...)
			if err != nil {
				return err
			}
			rep.Notes = append(rep.Notes, resolutionNotes(ctx, rt, argv[0])...)
			return a.replayReport(rep)
		},
	}
	cmd.Flags().BoolVar(&liveTools, "live-tools", false, "run the tools for real in a fresh copy of the recorded workspace and compare their outputs")
	jsonFlag(cmd, a)
	return cmd
}

// replayReport prints rep and returns the error its exit code comes
// from: errDiverged, errUnchecked (redacted or erased events), or nil.
func (a *app) replayReport(rep *replay.Report) error {
	if a.json {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else if err := printReport(a, rep); err != nil {
		return err
	}
	if !rep.OK() {
		return errDiverged
	}
	if len(rep.Redacted) > 0 || rep.Erased != nil {
		return errUnchecked
	}
	return nil
}

func printReport(a *app, rep *replay.Report) error {
	for _, n := range rep.Notes {
		// A note quotes a base URL and model names from the record.
		fmt.Fprintf(a.stdout, "note: %s\n", termSafe(n))
	}
	if rep.OK() && rep.Erased != nil {
		_, err := fmt.Fprintf(a.stdout, "reproduced except erased: %d of %d events before the first erased one (run %s, %d answers from the record); %s\n",
			rep.Matched, rep.Recorded, rep.Run, rep.Answered, rep.Unchecked())
		return err
	}
	if rep.OK() && len(rep.Redacted) > 0 {
		_, err := fmt.Fprintf(a.stdout, "reproduced except redacted: %d of %d events before the first redacted one (run %s, workflow %s, %d answers from the record); %s\n",
			rep.Matched, rep.Recorded, rep.Run, rep.Workflow, rep.Answered, rep.Unchecked())
		return err
	}
	if rep.OK() {
		unfinished := ""
		if u := rep.Unfinished(); u != "" {
			unfinished = "; " + u
		}
		_, err := fmt.Fprintf(a.stdout, "reproduced: %d of %d events (run %s, workflow %s, %d answers from the record)%s\n",
			rep.Matched, rep.Recorded, rep.Run, rep.Workflow, rep.Answered, unfinished)
		return err
	}
	d := rep.Divergence
	fmt.Fprintf(a.stdout, "diverged: %d of %d events reproduced (run %s, workflow %s)\n", rep.Matched, rep.Recorded, rep.Run, rep.Workflow)
	fmt.Fprintf(a.stdout, "first divergence: %s at seq %d, %s on %s v%d\n", d.Class, d.Seq, d.Type, d.Stream, d.Version)
	// The hint and the diff quote model text and tool output.
	fmt.Fprintf(a.stdout, "hint: %s\n", termSafe(d.Hint))
	if d.Diff != "" {
		fmt.Fprintf(a.stdout, "%s\n", termSafe(d.Diff))
	}
	return nil
}

func newResumeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a run that crashed: recorded calls are answered from the log, the rest runs live",
		Long: `resume re-executes a run that started and never finished. Every model and
tool call the record holds is answered from it, so nothing recorded is
repeated; where the record ends the run goes on live (real model, real
tools) and its events are written to the store. It prints the output
session id. A tool call that was recorded as started but not as returned
runs again. The resume holds the run's lease while it goes, as a worker
does: a second resume of the same run, or one of a run a fleet worker
is continuing, is refused before anything runs.

It streams what the resume records as "rath run" does (tool calls and
results, answers), then prints the run id and the output session id;
with --json, the events as JSON Lines and the summary object of run.`,
		Example: "rath resume run-0123456789abcdef --json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			wf, err := a.workflowForRun(ctx, rt, argv[0], rath.LiveMode)
			if err != nil {
				return err
			}
			head, err := rt.Store().Head(ctx)
			if err != nil {
				return err
			}
			// Under the run's lease, as a worker holds it (fleet.Resume): a
			// second resume, or a worker of the fleet, cannot continue the
			// run while this one does, and one that holds it refuses this
			// one before it runs anything.
			submitted := a.submitted(ctx, rt, argv[0])
			run, err := a.streamResume(ctx, rt, argv[0], head.Seq+1, func() (*rath.Run, error) {
				return fleet.Resume(ctx, rt, argv[0], wf, fleet.ResumeOptions{Held: func() {
					if submitted {
						fmt.Fprintf(a.stderr, "run %s was submitted to the fleet; it continues here, under this resume's lease, and its workers leave it alone while it goes\n", argv[0])
					}
				}})
			})
			if held := (*fleet.HeldError)(nil); errors.As(err, &held) {
				if submitted && !strings.HasPrefix(held.Holder, "resume:") {
					return fmt.Errorf("%w: it was submitted to the fleet and a worker is on it; follow it with \"rath wait %s\"", err, argv[0])
				}
				return fmt.Errorf("%w: wait until it stops, or for the lease to lapse", err)
			}
			if run == nil {
				run = &rath.Run{ID: argv[0]}
			}
			if a.json {
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				if eerr := enc.Encode(runSummary(run, err)); eerr != nil {
					return eerr
				}
				return err
			}
			if err != nil && !errors.Is(err, flow.ErrWaiting) {
				return err
			}
			fmt.Fprintf(a.stdout, "\nrun: %s\n", run.ID)
			if run.Output != nil {
				fmt.Fprintf(a.stdout, "session: %s\n", run.Output.ID())
			}
			if errors.Is(err, flow.ErrWaiting) {
				a.printWaiting(ctx, rt, argv[0], &termWriter{w: a.stderr})
			}
			return err
		},
	}
	jsonFlag(cmd, a)
	return cmd
}

// submitted reports whether run was submitted to the fleet.
func (a *app) submitted(ctx context.Context, rt *rath.Runtime, run string) bool {
	sub, _ := rt.Store().ReadStream(ctx, events.SubmitStream(run), 1)
	return len(sub) > 0
}

// streamResume runs resume and, while it goes, prints the events it
// records for run from seq from on (as rath run prints them, or as JSON
// Lines with --json); the events recorded after the last wake-up are
// read once more when it returns.
func (a *app) streamResume(ctx context.Context, rt *rath.Runtime, run string, from int64, resume func() (*rath.Run, error)) (*rath.Run, error) {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	tw, ew := &termWriter{w: a.stdout}, &termWriter{w: a.stderr}
	defer tw.Flush()
	defer ew.Flush()
	out := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	diag := func(format string, args ...any) { fmt.Fprintf(ew, format, args...) }
	next := from
	emit := func(ev events.Event) error {
		next = ev.Seq + 1
		if a.json {
			return enc.Encode(ev)
		}
		printEvent(ev, true, out, diag)
		return nil
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var r *rath.Run
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stop()
		r, rerr = resume()
	}()
	for ev, err := range rt.Store().Subscribe(sctx, eventlog.Query{RunID: run, FromSeq: from}) {
		if err != nil {
			break // the read below says what is missing
		}
		if err := emit(ev); err != nil {
			stop()
			<-done
			return r, err
		}
	}
	<-done
	rest, err := rt.Store().Read(ctx, eventlog.Query{RunID: run, FromSeq: next})
	if err != nil {
		return r, errors.Join(rerr, err)
	}
	for _, ev := range rest {
		if err := emit(ev); err != nil {
			return r, err
		}
	}
	return r, rerr
}
