package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/projections"
)

// runWorker is River's worker for RunArgs.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	f *Fleet
}

// Work takes the run's lease, then starts the run or, if it started
// before (its worker died, or it was suspended for a retry), resumes it.
// A run that ends (ok or failed) completes the job; a lost lease or a
// store failure returns an error, and River tries the job again later.
//
// A job for a run that is finished, or that this worker or another holder
// is executing now, ends at once and does nothing: after a takeover a run
// may have several jobs (the dead worker's, rescued by River; the
// reapers'), and only one execution of a run may go on at a time.
func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	f := w.f
	run := job.Args.Run
	if !f.hold(run) {
		f.logf("run %s: another job of it is running on this worker; this one ends", run)
		return nil
	}
	defer f.unhold(run)
	st, err := submittedState(ctx, f.rt, run)
	if errors.Is(err, errNotSubmitted) {
		return river.JobCancel(err) // no such run: nothing to retry
	}
	if err != nil {
		return err
	}
	if st.Finished {
		return nil
	}
	if !f.serves(st.Tenant) {
		return river.JobCancel(fmt.Errorf("%w: run %s is tenant %s's; this worker works %q", ErrOtherTenant, run, st.Tenant, f.opts.Tenants))
	}
	if f.opts.beforeTake != nil {
		f.opts.beforeTake()
	}
	g, err := f.guard(ctx, run, st.Lease)
	if held := (*HeldError)(nil); errors.As(err, &held) {
		// Its holder continues it; if the holder dies, its lease lapses
		// and a reaper enqueues the run again.
		f.logf("run %s: held by %s; this job ends", run, held.Holder)
		return nil
	}
	if err != nil {
		return err
	}
	// The run may have finished between the first look and the lease
	// (its worker was slow to renew, not dead): nothing to resume. Read
	// under the lease, the state is also what the run goes on from: no
	// one else can start it now.
	if st, err = submittedState(ctx, f.rt, run); err != nil {
		g.stop()
		g.release(ctx)
		return err
	}
	if st.Finished {
		g.stop()
		return nil
	}
	lease := g.lease
	f.logf("run %s: taken (lease token %d, attempt %d)", run, lease.Token, job.Attempt)
	if !st.Started && st.ParamsErased {
		// Its subject was erased while it was queued: its prompt and
		// params are gone. It ends as rath.Erase ends such a run, naming
		// no one (whichever of the two records it first, the other's
		// append conflicts).
		g.stop()
		f.logf("run %s: finished: failed: %s", run, rath.ErasedBeforeStart)
		st.Subject = ""
		return f.finishWith(ctx, lease, st, rath.RunError, rath.ErasedBeforeStart)
	}
	if st.Params == nil {
		// The build adds what it resolved to them, and Start records them.
		st.Params = map[string]string{}
	}
	wf, err := f.resolve(ctx, st)
	if err != nil {
		// Record the run as failed: no worker of this fleet can run it.
		g.stop()
		f.logf("run %s: finished: failed: %v", run, err)
		return f.failUnresolvable(ctx, lease, st, err)
	}
	lctx := g.ctx
	last := job.Attempt >= job.MaxAttempts
	rctx := lctx
	if !last {
		// Errors worth a retry suspend the run instead of ending it: the
		// model's (Retryable), the store's that pass (busy, a lost
		// connection, a restart), and whatever the run meets once its
		// context ended (the lease was lost, the worker is stopping).
		// The last attempt records them like any other failure.
		rctx = flow.ContextWithSuspend(lctx, func(err error) bool {
			return lctx.Err() != nil || f.opts.Retryable(err) || eventlog.IsTransient(err)
		})
	}
	if st.Started {
		// The guarded resume every front end uses (Resume), under the
		// guard the worker took as Hold takes one: its job's retries need
		// what Hold hides, the cause a lost lease cancels the run with, a
		// release only when not fenced, and a context that suspends the
		// run on errors worth another attempt instead of ending it.
		_, err = resumeHeld(rctx, f.rt, run, wf, &lease, func() {
			f.logf("run %s: resuming from its record (lease token %d)", run, lease.Token)
		})
	} else {
		input, lerr := f.rt.Session(rctx, st.InputSession)
		if lerr != nil {
			err = fmt.Errorf("fleet: run %s: input session: %w", run, lerr)
		} else {
			opts := []rath.RunOption{rath.WithRunID(run), rath.WithParams(st.Params), rath.WithTenant(st.Tenant), rath.WithLease(lease)}
			if id, ok := strings.CutPrefix(st.Subject, keyring.LevelUser+":"); ok {
				opts = append(opts, rath.WithSubject(id)) // the submission's
			}
			_, err = f.rt.Start(rctx, st.Workflow, wf, input, opts...)
		}
	}
	cause := g.stop()
	bg := context.WithoutCancel(ctx)
	// Start returns nil only once it recorded run.finished, status ok,
	// under this lease: the run is done and needs no read to say so.
	after := projections.RunState{Started: true, Finished: true, Status: rath.RunOK}
	var serr error
	if st.Started || err != nil {
		after, serr = runState(bg, f.rt, run)
	}
	if serr == nil && after.Finished {
		if err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
			// This attempt lost the lease (stopped or cut off past it) and
			// another holder finished the run: say so, not "finished".
			f.logf("run %s: lost: another holder took it and finished it (%v)", run, cause)
			return nil
		}
		// A finished run's lease is not released: no one takes a finished
		// run (the worker's first look, Hold), so a release would be a
		// commit that tells nobody anything. The log line names the
		// outcome in the words rath runs uses.
		f.logf("run %s: finished: %s", run, projections.StatusWord(after.Status))
		return nil // done, or failed in its workflow: either way, final
	}
	if cause != nil && !errors.Is(cause, context.Canceled) {
		err = errors.Join(err, cause)
	}
	fenced := errors.Is(err, eventlog.ErrFenced)
	if !fenced {
		// Handed back: whoever continues it may take it at once.
		g.release(bg)
	}
	if errors.Is(err, flow.ErrWaiting) && cause == nil {
		// Suspended for a person: neither failed nor finished. The job
		// ends; once everything is decided the run is running again, and
		// the reaper enqueues it.
		f.logf("run %s: handed back: waiting for a decision", run)
		return nil
	}
	if fenced {
		f.logf("run %s: lost: another holder took it", run)
		return err
	}
	if err == nil {
		err = fmt.Errorf("fleet: run %s returned without finishing", run)
	}
	if last {
		// The last attempt: the run ends failed, with the reason, rather
		// than staying "running" with no job behind it.
		reason := fmt.Sprintf("fleet: gave up after %d attempts: %v", job.Attempt, err)
		f.logf("run %s: finished: failed: %s", run, reason)
		if ferr := f.finishWith(bg, lease, after, rath.RunError, reason); ferr != nil {
			return errors.Join(err, ferr)
		}
		return nil
	}
	f.logf("run %s: handed back after attempt %d: %v", run, job.Attempt, err)
	f.opts.Logger.Warn("fleet: run attempt failed; it will be tried again", "run", run, "attempt", job.Attempt, "err", err)
	return err
}

// hold marks run as executing on this worker; false if it already is.
func (f *Fleet) hold(run string) bool {
	f.held.Lock()
	defer f.held.Unlock()
	if f.held.runs[run] {
		return false
	}
	f.held.runs[run] = true
	return true
}

func (f *Fleet) unhold(run string) {
	f.held.Lock()
	defer f.held.Unlock()
	delete(f.held.runs, run)
}

// logf writes one line about a run to Options.Log.
func (f *Fleet) logf(format string, args ...any) {
	if f.opts.Log == nil {
		return
	}
	f.logMu.Lock() // one line at a time
	defer f.logMu.Unlock()
	fmt.Fprintf(f.opts.Log, "worker %s: "+format+"\n", append([]any{f.opts.WorkerID}, args...)...)
}

// resolve builds the workflow of a submitted run, from st, its state
// read under the lease: for a run that started before, from the
// parameters its run.started recorded (Options.Resolve).
func (f *Fleet) resolve(ctx context.Context, st projections.RunState) (flow.Workflow, error) {
	if st.Started {
		ctx = context.WithValue(ctx, resumingKey{}, true)
	}
	if f.opts.Resolve != nil {
		return f.opts.Resolve(ctx, st.Workflow, st.Params)
	}
	params := st.Params
	if _, err := f.rt.Workflow(st.Workflow); err != nil && st.Workflow == rath.AgentWorkflow {
		// Whoever can submit wrote these parameters: they parse and check
		// as the agent they describe, and the policy judges that agent,
		// before anything it names is started or opened.
		spec, err := rath.ParseAgentSpec(params)
		if err == nil {
			err = spec.Check()
		}
		if err != nil {
			return nil, err
		}
		if err := f.opts.Policy.CheckAgent(spec); err != nil {
			return nil, err
		}
		// A run keeps the rules it started under: a resumed one's params
		// are its run.started's, with the rules recorded then.
		if !st.Started {
			f.opts.Policy.Impose(&spec)
			delete(params, rath.ParamImposed)
			maps.Copy(params, spec.Params())
		}
		if err := reachable(spec); err != nil {
			return nil, err
		}
	}
	if st.Started {
		return f.rt.RecordedWorkflow(ctx, st.Run, rath.LiveMode)
	}
	// What the build resolves (a provider, MCP tool specs) lands in
	// params, which the run records.
	wf, err := f.rt.BuildWorkflow(ctx, st.Workflow, params, rath.LiveMode)
	if errors.Is(err, rath.ErrUnknownWorkflow) {
		return nil, fmt.Errorf("this worker does not know workflow %q: register it on the worker's runtime (rath.Runtime.Register or RegisterBuilder; for a rath binary, in cli.Config.Setup): %w", st.Workflow, err)
	}
	return wf, err
}

// reachable refuses a run whose local or bwrap workspace this worker
// cannot see: it must be a path every worker shares.
func reachable(spec rath.AgentSpec) error {
	ws, backend := spec.Workspace, spec.Backend
	if ws == "" || (backend != "local" && backend != "bwrap") {
		return nil
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return fmt.Errorf("the run's workspace %s is not reachable from this worker; it must be a path every worker shares", ws)
	}
	return nil
}

type resumingKey struct{}

// Resuming reports whether Options.Resolve was called for a run that
// started before (a worker takes it over, or goes on once a person
// decided): its params are then the ones its run.started recorded.
func Resuming(ctx context.Context) bool {
	v, _ := ctx.Value(resumingKey{}).(bool)
	return v
}

// failUnresolvable records a run whose workflow this worker cannot build
// as failed, under its lease.
func (f *Fleet) failUnresolvable(ctx context.Context, lease eventlog.Lease, st projections.RunState, cause error) error {
	return f.finishWith(ctx, lease, st, rath.RunError, "fleet: "+cause.Error())
}

// approvalClock makes the run's approval deadlines set and judged on the
// lease clock, the one the reapers judge them by (expireDue).
func (f *Fleet) approvalClock(ctx context.Context) context.Context {
	return approval.WithClock(ctx, func(ctx context.Context) (time.Time, error) { return now(ctx, f.rt, f.opts.Clock) })
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
