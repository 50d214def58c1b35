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
	if opts.Holder == "" {
		host, _ := os.Hostname()
		opts.Holder = fmt.Sprintf("resume:%s-%d", host, os.Getpid())
	}
	lctx, lease, release, err := Hold(ctx, rt, run, opts.Holder, opts.LeaseTime)
	if err != nil {
		return nil, err
	}
	defer release()
	return resumeHeld(lctx, rt, run, wf, lease, opts.Held)
}

// resumeHeld resumes run with wf under lease (Hold's, or a worker's
// guard; nil for a finished run, which replay.Resume refuses): what Resume
// and a fleet worker's job share once the run is theirs. held, if not
// nil, is called before anything runs.
func resumeHeld(ctx context.Context, rt *rath.Runtime, run string, wf flow.Workflow, lease *eventlog.Lease, held func()) (*rath.Run, error) {
	if held != nil {
		held()
	}
	var under []replay.ResumeOption
	if lease != nil {
		under = append(under, replay.WithLease(*lease))
	}
	return replay.Resume(ctx, rt, run, wf, under...)
}
