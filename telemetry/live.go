package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorath/rath/eventlog"
)

// Live exports runs while they run: it follows the store's new events and
// turns them into spans as they are committed. A nil *Live is valid and
// does nothing, which is what StartFromEnv returns when no endpoint is
// configured.
type Live struct {
	store     *eventlog.Store
	p         *Pipeline
	own       bool // Close shuts the pipeline down
	cancel    context.CancelFunc
	done      chan struct{}
	processed atomic.Int64 // last seq handled

	mu  sync.Mutex // protects err
	err error      // first translation error
}

// StartFromEnv starts a live exporter configured by the environment (see
// FromEnv). With no OTLP endpoint set it returns nil, nil: no provider
// and no subscriber exist, so the program runs exactly as without
// telemetry.
func StartFromEnv(ctx context.Context, store *eventlog.Store) (*Live, error) {
	p, err := FromEnv(ctx)
	if err != nil || p == nil {
		return nil, err
	}
	l, err := StartLive(ctx, store, p)
	if err != nil {
		return nil, errors.Join(err, p.Shutdown(ctx))
	}
	l.own = true
	return l, nil
}

// StartLive follows store from its current head on and exports through p.
// Events committed before the call are not exported (ExportRuns does
// that). Close it to flush.
func StartLive(ctx context.Context, store *eventlog.Store, p *Pipeline) (*Live, error) {
	if store == nil || p == nil {
		return nil, errors.New("telemetry: live: a store and a pipeline are required")
	}
	head, err := store.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: live: %w", err)
	}
	// The subscriber outlives ctx's values but not its cancellation.
	sctx, cancel := context.WithCancel(ctx)
	l := &Live{store: store, p: p, cancel: cancel, done: make(chan struct{})}
	l.processed.Store(head.Seq)
	t := p.translator(store)
	go func() {
		defer close(l.done)
		for ev, err := range store.Subscribe(sctx, eventlog.Query{FromSeq: head.Seq + 1}) {
			if err != nil {
				l.fail(err)
				break
			}
			if err := t.handle(sctx, ev); err != nil {
				l.fail(err) // keep going: one bad event must not stop tracing
			}
			l.processed.Store(ev.Seq)
		}
		// Runs still open when the exporter stops end here, marked
		// incomplete; a later export from the log gives the same ids.
		t.flush()
	}()
	return l, nil
}

func (l *Live) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// catchUpWait bounds how long Close waits for the subscriber to reach the
// head the store had when Close was called.
const catchUpWait = 5 * time.Second

// Close waits until the events committed so far are exported (bounded by
// ctx and a few seconds), stops following the store, ends spans of runs
// still in progress as incomplete, and flushes. It returns the first
// translation error, if any.
func (l *Live) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if h, err := l.store.Head(ctx); err == nil {
		deadline := time.Now().Add(catchUpWait)
		for l.processed.Load() < h.Seq && time.Now().Before(deadline) && ctx.Err() == nil {
			select {
			case <-l.done:
				deadline = time.Time{}
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	l.cancel()
	<-l.done
	// The flush must run even when ctx is done: spans already ended
	// would otherwise be lost.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	ferr := l.p.ForceFlush(fctx)
	if l.own {
		ferr = errors.Join(ferr, l.p.Shutdown(fctx))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.err, ferr)
}
