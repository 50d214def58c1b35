package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
)

// Tables are the SQL projections Rebuild clears and refills, in an order
// safe for deleting. projection_checkpoints is not among them: it belongs
// to asynchronous projections (the memory index) with their own rebuild.
var Tables = []string{"chunks", "session_edges", "usage", "runs", "sessions", "id_counters"}

// RebuildStats reports a rebuild.
type RebuildStats struct {
	Events int64
}

// Rebuild drops every SQL projection row and replays the whole log through
// the projector, in one exclusive transaction: readers see the old state
// until it commits, and a failure leaves the old state in place. progress,
// if set, is called with events done and the total.
func Rebuild(ctx context.Context, store *events.Store, progress func(done, total int64)) (RebuildStats, error) {
	var stats RebuildStats
	head, err := store.Head(ctx)
	if err != nil {
		return stats, err
	}
	err = store.Exclusive(ctx, func(ctx context.Context, tx *events.Tx) error {
		for _, t := range Tables {
			if _, err := tx.Exec(`DELETE FROM ` + t); err != nil {
				return fmt.Errorf("projections: clear %s: %w", t, err)
			}
		}
		a := &applier{tx: tx, cache: map[string]*sessionInfo{}}
		// Read and decode on another goroutine while this one writes:
		// the two halves cost about the same.
		readCtx, stop := context.WithCancel(ctx)
		defer stop()
		decoded := make(chan decodedEvent, 1024)
		go decodeLog(readCtx, store, head.Seq, decoded)
		for d := range decoded {
			if d.err != nil {
				return fmt.Errorf("projections: rebuild: %w", d.err)
			}
			var err error
			if d.payload == nil {
				// A type this build does not know: it still moves its stream's version.
				err = a.touch(&d.ev)
			} else {
				err = a.project(&d.ev, d.payload)
			}
			if err != nil {
				return fmt.Errorf("projections: rebuild at seq %d: %w", d.ev.Seq, err)
			}
			stats.Events++
			if progress != nil && stats.Events%5000 == 0 {
				progress(stats.Events, head.Seq)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return a.flush()
	})
	if err != nil {
		return RebuildStats{}, err
	}
	if progress != nil {
		progress(stats.Events, head.Seq)
	}
	return stats, nil
}

type decodedEvent struct {
	ev      events.Event
	payload events.Payload // nil for a type this build does not know
	err     error
}

// decodeLog sends the log up to seq `to`, decoded, and closes out. It
// stops at the first error, which it sends.
func decodeLog(ctx context.Context, store *events.Store, to int64, out chan<- decodedEvent) {
	defer close(out)
	send := func(d decodedEvent) bool {
		select {
		case out <- d:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ev, err := range store.Scan(ctx, events.Query{ToSeq: to}) {
		if err != nil {
			send(decodedEvent{err: err})
			return
		}
		p, err := ev.Decode()
		if errors.Is(err, events.ErrUnknownType) {
			err = nil
		}
		if err != nil {
			send(decodedEvent{err: err})
			return
		}
		if !send(decodedEvent{ev: ev, payload: p}) {
			return
		}
	}
}
