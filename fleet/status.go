package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/projections"
)

// errNotSubmitted is a run with no run.submitted event.
var errNotSubmitted = errors.New("fleet: the run was never submitted")

// submittedState reads a submitted run's state from the read model, with
// its lease, in one query: what a worker and a cancel check before they
// act on the run. A run never submitted is errNotSubmitted.
func submittedState(ctx context.Context, rt *rath.Runtime, run string) (projections.RunState, error) {
	st, err := rt.Reader().RunState(ctx, run)
	if errors.Is(err, projections.ErrNotFound) || err == nil && !st.Submitted {
		return projections.RunState{}, fmt.Errorf("%w: %s", errNotSubmitted, run)
	}
	return st, err
}

// runState reads any run's state from the read model: a run the log
// has nothing of is a zero state (not started, never leased).
func runState(ctx context.Context, rt *rath.Runtime, run string) (projections.RunState, error) {
	st, err := rt.Reader().RunState(ctx, run)
	if errors.Is(err, projections.ErrNotFound) {
		return projections.RunState{Run: run, Params: map[string]string{}, Lease: projections.LeaseRow{Run: run}}, nil
	}
	return st, err
}

// ErrRunFailed is matched by the error Wait returns when a run ended
// failed.
var ErrRunFailed = errors.New("fleet: a run failed")

// StatusWaiting is the status of a run that waits for a person's decision.
const StatusWaiting = projections.RunWaiting

// Ending is how a run left a wait: its stored status and the error or
// cancel reason recorded with it (empty for a run that ended done).
type Ending struct {
	Status string
	Reason string
}

// WaitOptions tunes [WaitEndings]. The zero value waits until every run
// has ended (done, failed or canceled).
type WaitOptions struct {
	// StopAtWaiting, when true, also lets a run go that waits for a person
	// (status [StatusWaiting]): it does not continue by itself. False (the
	// default) keeps waiting through approvals, for a decision someone
	// else makes.
	StopAtWaiting bool
}

// Wait blocks until every run has finished (or ctx ends) and returns each
// run's final status; the error matches ErrRunFailed if any failed.
func Wait(ctx context.Context, rt *rath.Runtime, runs ...string) (map[string]string, error) {
	ended, err := WaitEndings(ctx, rt, WaitOptions{}, runs...)
	out := make(map[string]string, len(ended))
	for id, e := range ended {
		out[id] = e.Status
	}
	return out, err
}

// WaitEndings blocks until every run has ended, or, with
// opts.StopAtWaiting, waits for a person (or ctx ends), and returns how
// each run left, with its recorded reason. It wakes on the store's
// notifications and, for commits by other processes, on a short poll. A
// run not yet projected is waited for. The error is ctx's when it ends
// first (the map then holds the runs that had ended), and matches
// ErrRunFailed when a run ended other than done or waiting.
func WaitEndings(ctx context.Context, rt *rath.Runtime, opts WaitOptions, runs ...string) (map[string]Ending, error) {
	out := make(map[string]Ending, len(runs))
	for {
		wake := rt.Store().Notify()
		for _, id := range runs {
			if _, done := out[id]; done {
				continue
			}
			r, err := rt.Reader().Run(ctx, id)
			if err != nil {
				continue // not projected yet
			}
			switch r.Status {
			case projections.RunQueued, projections.RunRunning:
			case StatusWaiting:
				if opts.StopAtWaiting {
					out[id] = Ending{Status: r.Status}
				}
			default:
				out[id] = Ending{Status: r.Status, Reason: r.Error}
			}
		}
		if len(out) == len(runs) {
			var failed []string
			for _, id := range runs {
				if st := out[id].Status; st != rath.RunOK && st != StatusWaiting {
					failed = append(failed, id)
				}
			}
			if len(failed) > 0 {
				return out, fmt.Errorf("%w: %v", ErrRunFailed, failed)
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-wake:
		case <-time.After(500 * time.Millisecond):
		}
	}
}
