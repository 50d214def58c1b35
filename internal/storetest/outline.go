package storetest

import (
	"slices"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// testOutlineRun: a run's outline counts its events up to a seq and names
// their streams, without the events of other runs or of no run.
func testOutlineRun(t *testing.T, b Backend) {
	ctx := t.Context()
	s := OpenStore(t, b.New(t))
	write := func(run, stream string, n int) {
		t.Helper()
		a := s.In(eventlog.Scope{Run: events.RunRef{ID: run}})
		for i := range n {
			if _, err := a.Append(ctx, stream, eventlog.AnyVersion, placed(stream, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("r1", "s-b", 2)
	write("r2", "s-c", 3)
	write("", "s-a", 1)
	write("r1", "memory:notes", 1)
	mid, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write("r1", "s-a", 2)

	for _, tc := range []struct {
		run     string
		toSeq   int64
		events  int
		streams []string
	}{
		{"r1", 0, 5, []string{"memory:notes", "s-a", "s-b"}},
		{"r1", mid.Seq, 3, []string{"memory:notes", "s-b"}},
		{"r2", 0, 3, []string{"s-c"}},
		{"r3", 0, 0, nil},
	} {
		got, err := s.OutlineRun(ctx, tc.run, tc.toSeq)
		if err != nil {
			t.Fatal(err)
		}
		if got.Events != tc.events || !slices.Equal(got.Streams, tc.streams) {
			t.Errorf("OutlineRun(%s, %d) = %+v, want %d events on %v", tc.run, tc.toSeq, got, tc.events, tc.streams)
		}
		// The outline agrees with the record it outlines.
		evs, err := s.Read(ctx, eventlog.Query{RunID: tc.run, ToSeq: tc.toSeq})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != got.Events {
			t.Errorf("run %s up to %d: outline counts %d events, the log has %d", tc.run, tc.toSeq, got.Events, len(evs))
		}
	}
}
