package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// errNotSubmitted is a run with no run.submitted event.
var errNotSubmitted = errors.New("fleet: the run was never submitted")

// submitted reads a run's run.submitted event.
func submitted(ctx context.Context, store *events.Store, run string) (*events.RunSubmitted, error) {
	evs, err := store.ReadStream(ctx, events.SubmitStream(run), 1)
	if err != nil {
		return nil, err
	}
	return submittedIn(evs, run)
}

// submittedIn returns the run.submitted event among a submit stream's
// events.
func submittedIn(evs []events.Event, run string) (*events.RunSubmitted, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: %s", errNotSubmitted, run)
	}
	p, err := evs[0].Decode()
	if err != nil {
		return nil, err
	}
	return p.(*events.RunSubmitted), nil
}

type runStatus struct{ started, finished bool }

func runState(ctx context.Context, store *events.Store, run string) (runStatus, error) {
	v, err := store.StreamVersion(ctx, run)
	if err != nil {
		return runStatus{}, err
	}
	return statusAt(v), nil
}

// statusAt is the status of a run whose stream is at version v: the run
// stream holds run.started, then run.finished.
func statusAt(v int64) runStatus { return runStatus{started: v >= 1, finished: v >= 2} }

// firstLook reads, in one round trip, what a worker checks before it
// takes a run: its run.submitted, its status and its lease's events, and
// the run stream's events (run.started first, once it started).
func firstLook(ctx context.Context, store *events.Store, run string) (sub *events.RunSubmitted, state runStatus, lease, runEvents []events.Event, err error) {
	byStream, err := store.ReadStreams(ctx, events.SubmitStream(run), run, events.LeaseStream(run))
	if err != nil {
		return nil, runStatus{}, nil, nil, err
	}
	if sub, err = submittedIn(byStream[events.SubmitStream(run)], run); err != nil {
		return nil, runStatus{}, nil, nil, err
	}
	runEvents = byStream[run]
	var v int64
	if len(runEvents) > 0 {
		v = runEvents[len(runEvents)-1].Version
	}
	lease = byStream[events.LeaseStream(run)]
	if lease == nil {
		lease = []events.Event{} // read, and empty: not to be read again
	}
	return sub, statusAt(v), lease, runEvents, nil
}

// expiredRuns lists the runs whose last lease expired before now and that
// have not finished.
func expiredRuns(ctx context.Context, rt *rath.Runtime, now time.Time) ([]string, error) {
	db := rt.Store().DB()
	var runs []string
	err := db.SelectContext(ctx, &runs, db.Rebind(`SELECT l.run FROM run_leases l JOIN runs r ON r.id = l.run
		WHERE l.expires_at < ? AND r.status IN ('queued', 'running') ORDER BY l.run`), now.UnixNano())
	return runs, err
}

// ErrRunFailed is matched by the error Wait returns when a run ended
// failed.
var ErrRunFailed = errors.New("fleet: a run failed")

// StatusWaiting is the status of a run that waits for a person's decision.
const StatusWaiting = "waiting"

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
			case "queued", "running":
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
