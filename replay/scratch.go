package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/scratchopt"
)

// scratch is a throwaway runtime the replay writes to.
type scratch struct {
	rt  *rath.Runtime
	dir string
}

func newScratchWith(ctx context.Context, discardBlobs bool, projectors ...eventlog.Projector) (*scratch, error) {
	dir, err := os.MkdirTemp("", "rath-replay-")
	if err != nil {
		return nil, fmt.Errorf("replay: scratch dir: %w", err)
	}
	// In memory: a scratch store is thrown away, it needs no durability.
	// (A resume forwards its new events to the real store, which has it.)
	// It holds one run, so reads by run or type may scan it, and the
	// indexes for them would cost every event more than they save. Its
	// events are compared with the record's, never verified, so it keeps
	// no Merkle tree.
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir, Projectors: projectors,
		Store:   rath.StoreOptions{InMemory: true, Synchronous: "OFF"},
		Scratch: scratchopt.Options{WithoutReadIndexes: true, WithoutTree: true, DiscardBlobs: discardBlobs}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &scratch{rt: rt, dir: dir}, nil
}

func (s *scratch) close() error {
	return errors.Join(s.rt.Close(), os.RemoveAll(s.dir))
}

// copyLineage copies into dst the events, before seq `before`, of the
// session id and every session its state depends on (bases, sources,
// lineage parents), so the replayed run starts from the same state.
func copyLineage(ctx context.Context, src, dst *rath.Runtime, id string, before int64, extra ...string) error {
	closure := map[string]bool{}
	queue := []string{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if closure[cur] {
			continue
		}
		closure[cur] = true
		row, err := src.Reader().Session(ctx, cur)
		if err != nil {
			return fmt.Errorf("replay: input lineage: %w", err)
		}
		if row.Base.Valid {
			queue = append(queue, row.Base.String)
		}
		if row.Source.Valid {
			queue = append(queue, row.Source.String)
		}
		edges, err := src.Reader().Parents(ctx, cur)
		if err != nil {
			return err
		}
		for _, e := range edges {
			queue = append(queue, e.Parent)
		}
	}
	for _, stream := range extra {
		closure[stream] = true
	}
	var all []events.Event
	for stream := range closure {
		evs, err := src.Store().Read(ctx, eventlog.Query{Stream: stream, ToSeq: before - 1})
		if err != nil {
			return err
		}
		all = append(all, evs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
	// Batch consecutive events, one write per stream per batch.
	var batch []eventlog.Write
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := dst.Store().AppendWrites(ctx, batch...)
		batch = nil
		return err
	}
	index := map[string]int{}
	for _, ev := range all {
		p, err := ev.Decode()
		if err != nil {
			return fmt.Errorf("replay: copy input lineage: %w", err)
		}
		if i, ok := index[ev.Stream]; ok && i == len(batch)-1 {
			batch[i].Events = append(batch[i].Events, p)
			continue
		} else if ok || len(batch) >= 256 {
			if err := flush(); err != nil {
				return fmt.Errorf("replay: copy input lineage: %w", err)
			}
			index = map[string]int{}
		}
		index[ev.Stream] = len(batch)
		batch = append(batch, eventlog.Write{Stream: ev.Stream, Expected: ev.Version - 1, Events: []events.Payload{p}})
	}
	if err := flush(); err != nil {
		return fmt.Errorf("replay: copy input lineage: %w", err)
	}
	return nil
}
