package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// ErrHeld is matched by a *HeldError.
var ErrHeld = errors.New("fleet: the run is held by another worker")

// HeldError is a lease refused because another holder's lease on the run
// is live: a worker of the fleet, or another `rath resume`, is continuing
// it now.
type HeldError struct {
	Run    string
	Holder string
	// Since is when the holder took the run (its run.leased that was not
	// a renewal).
	Since time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("run %s is being continued by %s since %s", e.Run, e.Holder, e.Since.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// ErrLeaseLost is the cause a run's context is canceled with when its
// holder could not renew the lease before it ran out: another holder may
// have taken the run, so this one stops before it does anything more.
var ErrLeaseLost = errors.New("fleet: the run's lease ran out before it was renewed")

// now is the lease clock, the store's shared clock (eventlog's
// Store.Now): the database's on PostgreSQL, so that workers on machines
// whose clocks disagree still agree on when a lease expires; the
// machine's clock (clock, nil for time.Now) on SQLite, whose store one
// machine shares.
func now(ctx context.Context, rt *rath.Runtime, clock func() time.Time) (time.Time, error) {
	t, err := rt.Store().Now(ctx, clock)
	if err != nil {
		return time.Time{}, fmt.Errorf("fleet: %w", err)
	}
	return t, nil
}

// Now is the fleet's clock on rt's store: the database's on PostgreSQL,
// this machine's on SQLite. Leases, heartbeats and approval deadlines are
// on it, so a person's decision is judged against a request's deadline
// on the clock the deadline was set by.
func Now(ctx context.Context, rt *rath.Runtime) (time.Time, error) {
	return now(ctx, rt, nil)
}

// take acquires the run's lease for the worker: a new token, unless a
// lease is live (another worker's, or this worker's own from an attempt
// still going). A live lease is reported as a *HeldError. seen is the
// run's lease as the read model held it a moment ago: one out of date
// costs nothing but a second look, for the lease is appended at the
// lease stream's version it names.
func (f *Fleet) take(ctx context.Context, run string, seen projections.LeaseRow) (eventlog.Lease, error) {
	l, err := f.takeOnce(ctx, run, seen)
	if errors.Is(err, eventlog.ErrConflict) {
		// Another holder took it (or renewed it) just now: a second look
		// names it, or takes the run if that lease is already over.
		var st projections.RunState
		if st, err = runState(ctx, f.rt, run); err == nil {
			l, err = f.takeOnce(ctx, run, st.Lease)
		}
	}
	if errors.Is(err, eventlog.ErrConflict) {
		return eventlog.Lease{}, &HeldError{Run: run, Holder: "another holder", Since: time.Now()}
	}
	return l, err
}

func (f *Fleet) takeOnce(ctx context.Context, run string, seen projections.LeaseRow) (eventlog.Lease, error) {
	t, err := now(ctx, f.rt, f.opts.Clock)
	if err != nil {
		return eventlog.Lease{}, err
	}
	// A live lease of this worker's own is held by another of its
	// attempts only if that attempt is still going (held): f.hold
	// refuses a second attempt of a run before it gets here, so a live
	// lease under this worker's name is a leftover of an attempt that
	// ended without releasing it.
	if seen.Token > 0 && seen.Worker != f.opts.WorkerID && t.UnixNano() < seen.ExpiresAt {
		var since time.Time
		if seen.TakenAt != 0 {
			since = time.Unix(0, seen.TakenAt).UTC()
		}
		return eventlog.Lease{}, &HeldError{Run: run, Holder: seen.Worker, Since: since}
	}
	token := seen.Token + 1
	_, err = f.rt.Store().Append(ctx, events.LeaseStream(run), seen.Version,
		events.RunLeased{Run: run, Worker: f.opts.WorkerID, Token: token, ExpiresAt: t.Add(f.opts.LeaseTime).UnixNano()})
	if err != nil {
		return eventlog.Lease{}, err
	}
	return eventlog.Lease{Run: run, Token: token}, nil
}

// release ends the lease now, so the run can be taken again at once.
func (f *Fleet) release(ctx context.Context, lease eventlog.Lease) error {
	t, err := now(ctx, f.rt, f.opts.Clock)
	if err != nil {
		return err
	}
	_, err = f.rt.Store().In(eventlog.Scope{Lease: &lease}).Append(ctx, events.LeaseStream(lease.Run), eventlog.AnyVersion, events.RunLeased{
		Run: lease.Run, Worker: f.opts.WorkerID, Token: lease.Token, ExpiresAt: t.UnixNano(), Renewal: true})
	if errors.Is(err, eventlog.ErrFenced) {
		return nil // another worker took the run meanwhile: it is theirs
	}
	return err
}

// renew extends the lease every third of the lease time until ctx ends.
// A renewal refused because another holder took the run cancels the
// run's context with the reason; so does a lease that ran out while its
// renewals failed (the store was unreachable): by then another holder
// may have taken the run, and this one must stop rather than run a call
// that holder runs too.
func (f *Fleet) renew(ctx context.Context, lease eventlog.Lease, cancel context.CancelCauseFunc) {
	every := f.opts.LeaseTime / 3
	t := time.NewTicker(every)
	defer t.Stop()
	// The lease runs out no sooner than a lease time after the clock was
	// read for it, and that read came after this.
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(renewed) >= f.opts.LeaseTime {
			cancel(ErrLeaseLost)
			return
		}
		start := time.Now()
		at, err := now(ctx, f.rt, f.opts.Clock)
		if err == nil {
			// Fenced: a renewal of a lease another holder took is refused.
			_, err = f.rt.Store().In(eventlog.Scope{Lease: &lease}).Append(ctx, events.LeaseStream(lease.Run), eventlog.AnyVersion, events.RunLeased{
				Run: lease.Run, Worker: f.opts.WorkerID, Token: lease.Token, ExpiresAt: at.Add(f.opts.LeaseTime).UnixNano(), Renewal: true})
		}
		if errors.Is(err, eventlog.ErrFenced) {
			cancel(err)
			return
		}
		if err == nil {
			renewed = start
		} else if ctx.Err() == nil {
			f.opts.Logger.Warn("fleet: lease renewal failed", "run", lease.Run, "err", err)
		}
	}
}

// guard is a run's lease while its holder continues the run: taken
// (take) and renewed in the background until stop (renew); its holder
// passes lease to the run (rath.WithLease, replay.WithLease), so that
// every append of the run is fenced by its token; ctx is canceled with
// the reason (ErrLeaseLost, eventlog.ErrFenced) if the lease is lost. Hold, Resume and a fleet worker's job all continue a
// run under a guard: one way to take, renew and fence a run's lease.
type guard struct {
	f       *Fleet
	lease   eventlog.Lease
	ctx     context.Context
	cancel  context.CancelCauseFunc
	renewed chan struct{} // closed when the renewals stopped
}

// guard takes run's lease (seen is its lease as the read model held it,
// for take) and starts renewing it. A live lease of another holder is a
// *HeldError.
func (f *Fleet) guard(ctx context.Context, run string, seen projections.LeaseRow) (*guard, error) {
	lease, err := f.take(ctx, run, seen)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancelCause(f.approvalClock(ctx))
	g := &guard{f: f, lease: lease, ctx: lctx, cancel: cancel, renewed: make(chan struct{})}
	go func() {
		defer close(g.renewed)
		f.renew(lctx, lease, cancel)
	}()
	return g, nil
}

// stop ends the renewals and returns why the lease was lost before
// (ErrLeaseLost, eventlog.ErrFenced, or the caller's context's end), nil
// if nothing ended it. The lease is not released: a holder releases it
// only when it hands the run back (release).
func (g *guard) stop() error {
	cause := context.Cause(g.ctx)
	g.cancel(nil)
	<-g.renewed
	return cause
}

// release ends the lease now, so the run can be taken again at once; a
// lease another holder took meanwhile is theirs and is left alone.
func (g *guard) release(ctx context.Context) error {
	return g.f.release(context.WithoutCancel(ctx), g.lease)
}

// Hold takes run's lease for holder, as a worker of the fleet does, and
// keeps it renewed until the returned release is called: a `rath resume`
// holds the run this way, so that no worker and no other resume
// continues it at the same time. It returns the lease, for the appends
// to the run to be fenced with (replay.WithLease), and a context
// canceled if the lease is lost. A live lease of another holder is
// refused with a *HeldError before anything runs. A finished run is not
// held: the lease is nil, and the resume it was for finds nothing to
// continue. Zero leaseTime means DefaultLeaseTime.
func Hold(ctx context.Context, rt *rath.Runtime, run, holder string, leaseTime time.Duration) (context.Context, *eventlog.Lease, func(), error) {
	if leaseTime <= 0 {
		leaseTime = DefaultLeaseTime
	}
	f := &Fleet{rt: rt, opts: Options{WorkerID: holder, LeaseTime: leaseTime, Logger: slog.New(slog.DiscardHandler)}}
	// A finished run is continued by no one, and its last holder's lease
	// is left to lapse rather than released: nothing to hold.
	st, err := runState(ctx, rt, run)
	if err != nil {
		return nil, nil, nil, err
	}
	if st.Finished {
		return ctx, nil, func() {}, nil
	}
	g, err := f.guard(ctx, run, st.Lease)
	if err != nil {
		return nil, nil, nil, err
	}
	var once sync.Once
	return g.ctx, &g.lease, func() {
		once.Do(func() {
			g.stop()
			g.release(ctx)
		})
	}, nil
}
