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
		var p Projector
		for ev, err := range store.Scan(ctx, events.Query{ToSeq: head.Seq}) {
			if err != nil {
				return fmt.Errorf("projections: rebuild: %w", err)
			}
			payload, err := ev.Decode()
			if errors.Is(err, events.ErrUnknownType) {
				// A type this build does not know: it still moves its stream's version.
				if err := touch(tx, &ev); err != nil {
					return err
				}
				stats.Events++
				continue
			}
			if err != nil {
				return fmt.Errorf("projections: rebuild: %w", err)
			}
			if err := p.Project(ctx, tx, &ev, payload); err != nil {
				return fmt.Errorf("projections: rebuild at seq %d: %w", ev.Seq, err)
			}
			stats.Events++
			if progress != nil && stats.Events%5000 == 0 {
				progress(stats.Events, head.Seq)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return RebuildStats{}, err
	}
	if progress != nil {
		progress(stats.Events, head.Seq)
	}
	return stats, nil
}
