package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// testCarriedWrites checks eventlog.NewCarried: the carried write lands
// in the commit of the next append whose Scope carries it, ahead of it,
// exactly once however many appends race; a conflict on its stream
// refuses every append carrying it and writes nothing; a write to its own
// stream is merged into it; Flush writes it alone.
func testCarriedWrites(t *testing.T, b Backend) {
	ctx := t.Context()
	s := OpenStore(t, b.New(t))
	carry := func(stream string, expected int64) (*eventlog.Carried, func(stream string, expected int64, n int) ([]events.Event, error)) {
		t.Helper()
		c, err := eventlog.NewCarried(eventlog.Write{Stream: stream, Expected: expected, Events: []events.Payload{placed(stream, 0)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, func(stream string, expected int64, n int) ([]events.Event, error) {
			return s.In(eventlog.Scope{Carry: c}).Append(ctx, stream, expected, placed(stream, n))
		}
	}
	version := func(stream string) int64 {
		t.Helper()
		v, err := s.StreamVersion(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("RidesInTheNextCommit", func(t *testing.T) {
		c, appendUnder := carry("c1", eventlog.NoStream)
		before := s.Stats().Commits
		evs, err := appendUnder("a1", eventlog.NoStream, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Stream != "a1" {
			t.Fatalf("the append returned %+v, want its own event only", evs)
		}
		if got := s.Stats().Commits - before; got != 1 {
			t.Fatalf("%d commits, want 1", got)
		}
		if !c.Written() || version("c1") != 1 {
			t.Fatalf("carried write: written %v, stream at %d", c.Written(), version("c1"))
		}
		carried, err := s.Read(ctx, eventlog.Query{Stream: "c1"})
		if err != nil || len(carried) != 1 || carried[0].Seq != evs[0].Seq-1 {
			t.Fatalf("carried event %+v (%v), want it just ahead of seq %d", carried, err, evs[0].Seq)
		}
		// The next append carries nothing.
		if _, err := appendUnder("a1", 1, 2); err != nil || version("c1") != 1 {
			t.Fatalf("second append: %v, carried stream at %d", err, version("c1"))
		}
	})

	t.Run("MergedWithAWriteToItsStream", func(t *testing.T) {
		c, appendUnder := carry("c2", eventlog.NoStream)
		evs, err := appendUnder("c2", 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Version != 2 || !c.Written() || version("c2") != 2 {
			t.Fatalf("events %+v, written %v, stream at %d: want the caller's event at version 2", evs, c.Written(), version("c2"))
		}
	})

	t.Run("AnotherExpectationGoesAfterIt", func(t *testing.T) {
		c, appendUnder := carry("c3", eventlog.NoStream)
		_, err := appendUnder("c3", eventlog.NoStream, 1)
		var ce *eventlog.ConflictError
		if !errors.As(err, &ce) || ce.Stream != "c3" || ce.Actual != 1 {
			t.Fatalf("err = %v, want the caller's own conflict after the carried write", err)
		}
		if !c.Written() || c.Refused() != nil || version("c3") != 1 {
			t.Fatalf("written %v, refused %v, stream at %d", c.Written(), c.Refused(), version("c3"))
		}
	})

	t.Run("AConflictRefusesEveryAppend", func(t *testing.T) {
		if _, err := s.Append(ctx, "c4", eventlog.NoStream, placed("c4", 9)); err != nil {
			t.Fatal(err)
		}
		c, appendUnder := carry("c4", eventlog.NoStream)
		for i := range 2 {
			_, err := appendUnder("a4", eventlog.NoStream, i)
			var ce *eventlog.ConflictError
			if !errors.As(err, &ce) || ce.Stream != "c4" {
				t.Fatalf("append %d: err = %v, want the carried write's conflict", i, err)
			}
		}
		if !errors.Is(c.Refused(), eventlog.ErrConflict) || c.Written() {
			t.Fatalf("refused %v, written %v", c.Refused(), c.Written())
		}
		if !errors.Is(c.Flush(ctx, s.In(eventlog.Scope{})), eventlog.ErrConflict) {
			t.Fatal("Flush of a refused write succeeded")
		}
		if version("a4") != 0 || version("c4") != 1 {
			t.Fatalf("a4 at %d, c4 at %d: something landed", version("a4"), version("c4"))
		}
	})

	t.Run("RacingAppendsCarryItOnce", func(t *testing.T) {
		c, appendUnder := carry("c5", eventlog.NoStream)
		const n = 12
		seqs := make([]int64, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				evs, err := appendUnder("a5", eventlog.AnyVersion, i)
				if err != nil {
					errs <- err
					return
				}
				seqs[i] = evs[0].Seq
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		carried, err := s.Read(ctx, eventlog.Query{Stream: "c5"})
		if err != nil || len(carried) != 1 || !c.Written() {
			t.Fatalf("carried stream %+v (%v), written %v: want one event", carried, err, c.Written())
		}
		for i, seq := range seqs {
			if seq <= carried[0].Seq {
				t.Fatalf("append %d landed at seq %d, before the carried write's %d", i, seq, carried[0].Seq)
			}
		}
	})

	t.Run("FlushWritesItAlone", func(t *testing.T) {
		c, _ := carry("c6", eventlog.AnyVersion)
		for range 2 {
			if err := c.Flush(ctx, s.In(eventlog.Scope{})); err != nil {
				t.Fatal(err)
			}
		}
		if !c.Written() || version("c6") != 1 {
			t.Fatalf("written %v, stream at %d: want one event", c.Written(), version("c6"))
		}
	})

	t.Run("NestedOnOneStream", func(t *testing.T) {
		outer, err := eventlog.NewCarried(eventlog.Write{Stream: "c8", Expected: eventlog.NoStream, Events: []events.Payload{placed("c8", 1)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := eventlog.NewCarried(eventlog.Write{Stream: "c8", Expected: 1, Events: []events.Payload{placed("c8", 2)}}, outer)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.In(eventlog.Scope{Carry: inner}).Append(ctx, "a8", eventlog.NoStream, placed("a8", 1))
		if err != nil {
			t.Fatal(err)
		}
		carried, _ := s.ReadStream(ctx, "c8", 1)
		if !outer.Written() || !inner.Written() || len(carried) != 2 || carried[1].Seq >= evs[0].Seq {
			t.Fatalf("written %v %v, carried stream %+v, the append at seq %d", outer.Written(), inner.Written(), carried, evs[0].Seq)
		}
	})

	t.Run("AnAppendNamingItsStreamTwiceIsRefused", func(t *testing.T) {
		c, err := eventlog.NewCarried(eventlog.Write{Stream: "c9", Expected: eventlog.NoStream, Events: []events.Payload{placed("c9", 1)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.In(eventlog.Scope{Carry: c}).AppendWrites(ctx, eventlog.Write{Stream: "c9", Expected: 1, Events: []events.Payload{placed("c9", 2)}},
			eventlog.Write{Stream: "c9", Expected: eventlog.AnyVersion, Events: []events.Payload{placed("c9", 3)}})
		if !errors.Is(err, events.ErrInvalid) || !c.Written() || version("c9") != 1 {
			t.Fatalf("err = %v, written %v, stream at %d: want the append refused as invalid after the carried write", err, c.Written(), version("c9"))
		}
	})

	t.Run("InvalidIsRefusedAtOnce", func(t *testing.T) {
		if _, err := eventlog.NewCarried(eventlog.Write{Stream: "c7", Expected: eventlog.NoStream}, nil); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("a write of no events: err = %v, want ErrInvalid", err)
		}
		if _, err := eventlog.NewCarried(eventlog.Write{Stream: "c7", Expected: eventlog.NoStream, Events: []events.Payload{placed("other", 1)}}, nil); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("a payload of another stream: err = %v, want ErrInvalid", err)
		}
	})
	MustVerify(t, s)
}
