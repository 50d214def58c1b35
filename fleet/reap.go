package fleet

import (
	"context"
	"encoding/json"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/gorath/rath/events"
)

// reap re-enqueues runs whose lease expired before they finished (their
// worker died, or a peer expired the lease of a worker whose heartbeat
// stopped), so another worker takes them over without waiting for
// River's own rescue of the dead worker's job. A run that has a job
// waiting already (a retry after a backoff, a new job not yet taken)
// gets none: it would only be a second job for the same run.
func (f *Fleet) reap(ctx context.Context) {
	t := time.NewTicker(max(min(f.opts.LeaseTime/3, f.opts.DeadAfter/4), 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.reapOnce(ctx)
	}
}

// reapOnce is one look of the reaper: approvals past their deadline,
// leases of dead workers, and runs whose lease lapsed or whose job was
// orphaned, enqueued again. What it reads follows the runs not finished,
// not the store's history (projections, leases.go).
func (f *Fleet) reapOnce(ctx context.Context) {
	at, err := now(ctx, f.rt, f.opts.Clock)
	if err != nil {
		return
	}
	// Deadlines are on the lease clock too (the runs set them on it:
	// see Work), so they fall due at the same moment for every
	// worker, whatever its machine's clock says.
	f.expireDue(ctx, at)
	f.expireDead(ctx, at)
	runs, err := f.rt.Reader().ExpiredLeases(ctx, at.UnixNano())
	if err != nil {
		return
	}
	orphans, err := f.orphanedRuns(ctx, at)
	if err != nil && ctx.Err() == nil {
		f.opts.Logger.Warn("fleet: list running jobs", "err", err)
	}
	runs = append(runs, orphans...)
	if len(runs) == 0 {
		return
	}
	queued, err := f.queuedRuns(ctx)
	if err != nil {
		return
	}
	// Each tenant's workers take its runs over.
	mine := f.mine(ctx, runs)
	for _, run := range runs {
		queue, ok := mine[run]
		if queued[run] || !ok {
			continue
		}
		// The dead worker's job stays "running" until River rescues
		// it, and River's uniqueness always counts running jobs: the
		// new job is unique per run and lease period instead, so the
		// reapers of several workers add one, not one each.
		_, err := f.client.Insert(ctx, RunArgs{Run: run}, &river.InsertOpts{Queue: queue, UniqueOpts: river.UniqueOpts{
			ByArgs: true, ByPeriod: f.opts.LeaseTime,
		}})
		if err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: re-enqueue", "run", run, "err", err)
		}
	}
}

// queuedRuns are the runs that have a job waiting to be worked.
func (f *Fleet) queuedRuns(ctx context.Context) (map[string]bool, error) {
	res, err := f.client.JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind()).Queues(f.queues()...).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateScheduled).First(10000))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, j := range res.Jobs {
		var args RunArgs
		if json.Unmarshal(j.EncodedArgs, &args) == nil {
			out[args.Run] = true
		}
	}
	return out, nil
}

// expireDead ends, at once and with fencing, the live leases (of runs not
// finished) of workers whose heartbeat stopped more than DeadAfter ago: their runs are taken
// over within seconds of a crash rather than a lease time. The lease it
// writes is a new token under this worker's name that expires now, so
// the dead worker (if it was only paused) can append nothing more, and
// the reaper enqueues the run at once.
func (f *Fleet) expireDead(ctx context.Context, at time.Time) {
	dead, err := f.deadWorkers(ctx, at)
	if err != nil || len(dead) == 0 {
		return
	}
	leases, err := f.rt.Reader().LiveLeases(ctx, at.UnixNano())
	if err != nil {
		return
	}
	for _, l := range leases {
		since, ok := dead[l.Worker]
		if !ok || l.ExpiresAt <= at.UnixNano() {
			continue
		}
		// At the lease stream's version read: a renewal written meanwhile
		// (the worker is alive after all) makes this a conflict, and the
		// lease stands.
		_, err = f.rt.Store().Append(ctx, events.LeaseStream(l.Run), l.Version, events.RunLeased{
			Run: l.Run, Worker: f.opts.WorkerID, Token: l.Token + 1, ExpiresAt: at.UnixNano()})
		if err == nil {
			f.logf("run %s: expired the lease of %s (no heartbeat since %s)", l.Run, l.Worker, since.UTC().Format(time.RFC3339Nano))
		}
	}
}

// orphanedRuns lists runs whose job a worker took more than a lease time
// ago without taking the run's lease (or whose lease lapsed): a live
// worker takes the lease as soon as it takes the job, so that worker died
// in between. River would rescue the job only after RescueStuckJobsAfter.
func (f *Fleet) orphanedRuns(ctx context.Context, now time.Time) ([]string, error) {
	res, err := f.client.JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind()).Queues(f.queues()...).
		States(rivertype.JobStateRunning).First(1000))
	if err != nil {
		return nil, err
	}
	// Only a job taken more than a lease time ago can be an orphan: the
	// leases of those runs are read, not every lease the store holds.
	var taken []string
	for _, j := range res.Jobs {
		if j.AttemptedAt == nil || time.Since(*j.AttemptedAt) < f.opts.LeaseTime {
			continue
		}
		var args RunArgs
		if json.Unmarshal(j.EncodedArgs, &args) == nil && args.Run != "" {
			taken = append(taken, args.Run)
		}
	}
	if len(taken) == 0 {
		return nil, nil
	}
	leases, err := f.rt.Reader().LeasesOf(ctx, taken)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, l := range leases {
		live[l.Run] = l.ExpiresAt > now.UnixNano()
	}
	var out []string
	for _, run := range taken {
		if live[run] {
			continue
		}
		if st, err := runState(ctx, f.rt, run); err != nil || st.Finished {
			continue
		}
		out = append(out, run)
	}
	return out, nil
}
