package main

import (
	"testing"

	"github.com/gorath/rath/events"
)

// writerStats reads the line every rath worker prints at exit, in each
// form it has had, so a bench of an older binary still reports.
func TestWriterStats(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       events.Stats
		ok         bool
	}{
		{"round trips only", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips\n",
			events.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40}, true},
		{"redone", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 1 appends staged, 2 staged appends written, 3 batches redone\n",
			events.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Staged: 1, Combined: 2, Redone: 3}, true},
		{"optimistic", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 1 appends staged, 2 staged appends written, 3 batches redone, 7 optimistic commits, 2 missed\n",
			events.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Staged: 1, Combined: 2, Redone: 3, Optimistic: 7, Missed: 2}, true},
		{"none", "worker w1: stopped\n", events.Stats{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := writerStats(c.line)
			if ok != c.ok || got != c.want {
				t.Fatalf("writerStats = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
