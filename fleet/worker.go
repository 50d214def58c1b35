package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// runWorker is River's worker for RunArgs.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	f *Fleet
}

// Work takes the run's lease, then starts the run or, if it started
// before (its worker died), resumes it. A run that ends (ok or failed)
// completes the job; a lost lease or a store failure returns an error,
// and River tries the job again later.
func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	f := w.f
	run := job.Args.Run
	store := f.rt.Store()
	sub, err := submitted(ctx, store, run)
	if err != nil {
		return river.JobCancel(err) // no such run: nothing to retry
	}
	state, err := runState(ctx, store, run)
	if err != nil {
		return err
	}
	if state.finished {
		return nil
	}
	if f.opts.beforeTake != nil {
		f.opts.beforeTake()
	}
	lease, wait, err := f.take(ctx, run)
	if err != nil {
		return err
	}
	if wait > 0 {
		return river.JobSnooze(wait)
	}
	// The run may have finished between the first look and the lease
	// (its worker was slow to renew, not dead): nothing to resume.
	if state, err = runState(ctx, store, run); err != nil {
		return err
	}
	if state.finished {
		return nil
	}
	wf, err := f.resolve(ctx, sub)
	if err != nil {
		// Record the run as failed: no worker of this fleet can run it.
		return f.failUnresolvable(ctx, lease, sub, state, err)
	}
	rctx := events.ContextWithLease(ctx, lease)
	if job.Attempt < job.MaxAttempts {
		// The last attempt records a retryable failure like any other.
		rctx = flow.ContextWithSuspend(rctx, f.opts.Retryable)
	}
	lctx, cancel := context.WithCancelCause(rctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		f.renew(lctx, lease, cancel)
	}()
	if state.started {
		_, err = replay.Resume(lctx, f.rt, run, wf)
	} else {
		input, lerr := f.rt.Session(lctx, sub.InputSession)
		if lerr != nil {
			err = fmt.Errorf("fleet: run %s: input session: %w", run, lerr)
		} else {
			_, err = f.rt.Start(lctx, sub.Workflow, wf, input, rath.WithRunID(run), rath.WithParams(sub.Params))
		}
	}
	cause := context.Cause(lctx)
	cancel(nil)
	<-renewed
	after, serr := runState(context.WithoutCancel(ctx), store, run)
	if serr == nil && after.finished {
		return nil // done, or failed in its workflow: either way, final
	}
	if errors.Is(err, flow.ErrWaiting) && cause == nil {
		// Suspended for a person: neither failed nor finished. The job
		// ends and the lease is let go; once everything is decided the
		// run is running again, and the reaper enqueues it.
		return f.release(context.WithoutCancel(ctx), lease)
	}
	if cause != nil && !errors.Is(cause, context.Canceled) {
		err = errors.Join(err, cause)
	}
	if err == nil {
		err = fmt.Errorf("fleet: run %s returned without finishing", run)
	}
	if job.Attempt >= job.MaxAttempts && !errors.Is(err, events.ErrFenced) {
		// The last attempt: the run ends failed, with the reason, rather
		// than staying "running" with no job behind it.
		reason := fmt.Sprintf("fleet: gave up after %d attempts: %v", job.Attempt, err)
		if ferr := f.finishWith(context.WithoutCancel(ctx), lease, sub, after, rath.RunError, reason); ferr != nil {
			return errors.Join(err, ferr)
		}
		return nil
	}
	f.opts.Logger.Warn("fleet: run attempt failed; it will be tried again", "run", run, "attempt", job.Attempt, "err", err)
	return err
}

func (f *Fleet) resolve(ctx context.Context, sub *events.RunSubmitted) (flow.Workflow, error) {
	if f.opts.Resolve != nil {
		return f.opts.Resolve(ctx, sub.Workflow, sub.Params)
	}
	return f.rt.Workflow(sub.Workflow)
}

// failUnresolvable records a run whose workflow this worker cannot build
// as failed, under its lease.
func (f *Fleet) failUnresolvable(ctx context.Context, lease events.Lease, sub *events.RunSubmitted, state runStatus, cause error) error {
	return f.finishWith(ctx, lease, sub, state, rath.RunError, "fleet: "+cause.Error())
}

// take acquires the run's lease: a new token, unless another worker's
// lease is still live (then it says how long to wait).
func (f *Fleet) take(ctx context.Context, run string) (events.Lease, time.Duration, error) {
	store := f.rt.Store()
	evs, err := store.ReadStream(ctx, events.LeaseStream(run), 1)
	if err != nil {
		return events.Lease{}, 0, err
	}
	var last *events.RunLeased
	if n := len(evs); n > 0 {
		p, err := evs[n-1].Decode()
		if err != nil {
			return events.Lease{}, 0, err
		}
		last = p.(*events.RunLeased)
	}
	now := time.Now()
	if last != nil && last.Worker != f.opts.WorkerID && now.UnixNano() < last.ExpiresAt {
		return events.Lease{}, time.Duration(last.ExpiresAt-now.UnixNano()) + 50*time.Millisecond, nil
	}
	token := int64(1)
	if last != nil {
		token = last.Token + 1
	}
	_, err = store.Append(ctx, events.LeaseStream(run), int64(len(evs)),
		events.RunLeased{Run: run, Worker: f.opts.WorkerID, Token: token, ExpiresAt: now.Add(f.opts.LeaseTime).UnixNano()})
	if errors.Is(err, events.ErrConflict) {
		return events.Lease{}, f.opts.LeaseTime / 4, nil // another worker took it just now
	}
	if err != nil {
		return events.Lease{}, 0, err
	}
	return events.Lease{Run: run, Token: token}, 0, nil
}

// release ends the lease now, so the run can be taken again at once.
func (f *Fleet) release(ctx context.Context, lease events.Lease) error {
	_, err := f.rt.Store().Append(events.ContextWithLease(ctx, lease), events.LeaseStream(lease.Run), events.AnyVersion, events.RunLeased{
		Run: lease.Run, Worker: f.opts.WorkerID, Token: lease.Token, ExpiresAt: time.Now().UnixNano(), Renewal: true})
	if errors.Is(err, events.ErrFenced) {
		return nil // another worker took the run meanwhile: it is theirs
	}
	return err
}

// expireDue records the default decision of every pending request past
// its deadline, so its run can go on (the reaper then enqueues it).
func (f *Fleet) expireDue(ctx context.Context, now time.Time) {
	rows, err := f.rt.Reader().PendingApprovals(ctx)
	if err != nil {
		return
	}
	for _, r := range rows {
		if r.Deadline == 0 || now.UnixNano() < r.Deadline {
			continue
		}
		if _, err := approval.Expire(ctx, f.rt.Store(), r.ID, now); err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: expire approval", "id", r.ID, "err", err)
		}
	}
}

// renew extends the lease every third of the lease time until ctx ends;
// a renewal refused because another worker took the run cancels the run's
// context with the reason.
func (f *Fleet) renew(ctx context.Context, lease events.Lease, cancel context.CancelCauseFunc) {
	every := f.opts.LeaseTime / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := f.rt.Store().Append(ctx, events.LeaseStream(lease.Run), events.AnyVersion, events.RunLeased{
			Run: lease.Run, Worker: f.opts.WorkerID, Token: lease.Token, ExpiresAt: time.Now().Add(f.opts.LeaseTime).UnixNano(), Renewal: true})
		if errors.Is(err, events.ErrFenced) {
			cancel(err)
			return
		}
		if err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: lease renewal failed", "run", lease.Run, "err", err)
		}
	}
}

// reap beats this worker's heartbeat and re-enqueues runs whose lease expired before they finished (their
// worker died), so another worker takes them over without waiting for
// River's own rescue of the dead worker's job.
func (f *Fleet) reap(ctx context.Context, started time.Time) {
	t := time.NewTicker(max(f.opts.LeaseTime/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.expireDue(ctx, time.Now())
		if err := f.beat(ctx, started); err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: heartbeat", "err", err)
		}
		runs, err := expiredRuns(ctx, f.rt, time.Now())
		if err != nil {
			continue
		}
		orphans, err := f.orphanedRuns(ctx)
		if err != nil && ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: list running jobs", "err", err)
		}
		for _, run := range append(runs, orphans...) {
			// The dead worker's job stays "running" until River rescues
			// it, and River's uniqueness always counts running jobs: the
			// new job is unique per run and lease period instead, so the
			// reapers of several workers add one, not one each.
			_, err := f.client.Insert(ctx, RunArgs{Run: run}, &river.InsertOpts{Queue: f.opts.Queue, UniqueOpts: river.UniqueOpts{
				ByArgs: true, ByPeriod: f.opts.LeaseTime,
			}})
			if err != nil && ctx.Err() == nil {
				f.opts.Logger.Warn("fleet: re-enqueue", "run", run, "err", err)
			}
		}
	}
}

// orphanedRuns lists runs whose job a worker took more than a lease time
// ago without taking the run's lease (or whose lease lapsed): a live
// worker takes the lease as soon as it takes the job, so that worker died
// in between. River would rescue the job only after RescueStuckJobsAfter.
func (f *Fleet) orphanedRuns(ctx context.Context) ([]string, error) {
	res, err := f.client.JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind()).Queues(f.opts.Queue).
		States(rivertype.JobStateRunning).First(1000))
	if err != nil {
		return nil, err
	}
	leases, err := f.rt.Reader().Leases(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	now := time.Now()
	for _, l := range leases {
		live[l.Run] = l.ExpiresAt > now.UnixNano()
	}
	var out []string
	for _, j := range res.Jobs {
		if j.AttemptedAt == nil || now.Sub(*j.AttemptedAt) < f.opts.LeaseTime {
			continue
		}
		var args RunArgs
		if json.Unmarshal(j.EncodedArgs, &args) != nil || args.Run == "" || live[args.Run] {
			continue
		}
		if st, err := runState(ctx, f.rt.Store(), args.Run); err != nil || st.finished {
			continue
		}
		out = append(out, args.Run)
	}
	return out, nil
}
