package fleet

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// ResumeOptions tunes [Resume]. The zero value is ready to use.
type ResumeOptions struct {
	// Holder names this resume in the run's lease: what a refused
	// resume's *HeldError, `rath runs` and the console show as the run's
	// holder. Empty means "resume:HOST-PID" for this process.
	Holder string
	// LeaseTime is how long the lease lasts without a renewal (it is
	// renewed every third of it while the resume goes). Zero means
	// DefaultLeaseTime.
	LeaseTime time.Duration
	// Held, if not nil, is called once, after the lease is taken and
	// before the resume runs anything: a front end answers its caller
	// then (the console's "accepted", the CLI's notice). It is not called
	// when the lease is refused.
	Held func()

	// held is the lease a fleet worker took and renews itself: Resume
	// takes none and releases none (Work).
	held *eventlog.Lease
}

// Resume continues run, a run that started and never finished, under its
// lease, as a fleet worker does: it takes the lease (Hold), runs
// replay.Resume with wf under it, so every append it makes is fenced by
// the lease's token, and releases the lease when the resume returns. A
// live lease of another holder (a worker, another resume) is refused
// with a *HeldError (errors.Is ErrHeld) before anything runs. A finished
// run is not held, and replay.Resume refuses it. `rath resume`, the
// console's resume and a fleet worker that takes over a started run all
// go through Resume, so they are guarded alike; wf is theirs to build
// (rath.Runtime.RecordedWorkflow in rath.LiveMode).
func Resume(ctx context.Context, rt *rath.Runtime, run string, wf flow.Workflow, opts ResumeOptions) (*rath.Run, error) {
	if l := opts.held; l != nil {
		if l.Run != run {
			return nil, fmt.Errorf("fleet: resume run %s under the lease of run %s", run, l.Run)
		}
		if opts.Held != nil {
			opts.Held()
		}
		return replay.Resume(eventlog.ContextWithLease(ctx, *l), rt, run, wf)
	}
	if opts.Holder == "" {
		host, _ := os.Hostname()
		opts.Holder = fmt.Sprintf("resume:%s-%d", host, os.Getpid())
	}
	lctx, release, err := Hold(ctx, rt, run, opts.Holder, opts.LeaseTime)
	if err != nil {
		return nil, err
	}
	defer release()
	if opts.Held != nil {
		opts.Held()
	}
	return replay.Resume(lctx, rt, run, wf)
}
