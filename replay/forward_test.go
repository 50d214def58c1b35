package replay

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// failingProjector holds the scratch writer on the gate stream's event
// until released and refuses the bad stream's event, so the writer rolls
// back the batch holding it and redoes it; it counts the ok stream's
// event, which a redone batch projects twice.
type failingProjector struct {
	gate    chan struct{}
	seenOK  atomic.Int32 // how often the ok stream's event was projected
	refused error
}

func (p *failingProjector) Project(_ context.Context, _ *eventlog.Tx, ev *events.Event, _ events.Payload) error {
	switch ev.Stream {
	case events.MemoryStream("gate"):
		<-p.gate
	case events.MemoryStream("ok"):
		p.seenOK.Add(1)
	case events.MemoryStream("bad"):
		return p.refused
	}
	return nil
}

func remembered(ns string) events.Payload {
	return events.MemoryRemembered{Namespace: ns, ID: "m-" + ns, Text: "memo in " + ns}
}

// TestForwarder_RedoneBatchForwardsOnce: a batch the scratch writer redoes
// runs the projectors twice; the real store must still get the committed
// event once, and the refused one never.
func TestForwarder_RedoneBatchForwardsOnce(t *testing.T) {
	const runID = "run-fwd"
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("the writer never put the ok and bad writes in one batch")
		}
		ctx := t.Context()
		run := eventlog.Scope{Run: events.RunRef{ID: runID}}
		dst, err := newScratchWith(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		fw := newForwarder(dst.rt.Store().In(run), "", nil)
		fp := &failingProjector{gate: make(chan struct{}), refused: errors.New("refused by a projector")}
		src, err := newScratchWith(ctx, false, fp, fw)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.start(ctx, src.rt.Store()); err != nil {
			t.Fatal(err)
		}
		store := src.rt.Store().In(run)
		var wg sync.WaitGroup
		wg.Go(func() { store.Append(ctx, events.MemoryStream("gate"), eventlog.NoStream, remembered("gate")) })
		time.Sleep(20 * time.Millisecond) // the writer now holds the gate's batch
		var okErr, badErr error
		wg.Go(func() { _, okErr = store.Append(ctx, events.MemoryStream("ok"), eventlog.NoStream, remembered("ok")) })
		wg.Go(func() {
			_, badErr = store.Append(ctx, events.MemoryStream("bad"), eventlog.NoStream, remembered("bad"))
		})
		time.Sleep(20 * time.Millisecond) // both queued behind it
		close(fp.gate)
		wg.Wait()
		ferr := fw.stop()
		redone := fp.seenOK.Load() > 1
		got := map[string]int{}
		evs, rerr := dst.rt.Store().Read(ctx, eventlog.Query{RunID: runID})
		for _, ev := range evs {
			got[ev.Stream]++
		}
		src.close()
		dst.close()
		if !redone {
			continue // another interleaving: try again
		}
		if okErr != nil || badErr == nil || ferr != nil || rerr != nil {
			t.Fatalf("ok append: %v, bad append: %v, forward: %v, read: %v", okErr, badErr, ferr, rerr)
		}
		if got[events.MemoryStream("ok")] != 1 || got[events.MemoryStream("bad")] != 0 || got[events.MemoryStream("gate")] != 1 {
			t.Fatalf("the real store got %v, want the gate and ok events once each and no bad one", got)
		}
		return
	}
}
