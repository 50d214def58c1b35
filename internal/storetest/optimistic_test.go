package storetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// An optimistic commit (eventlog/optimistic.go) checks, in its one round
// trip, that no other process committed since its writer's last commit.
// When one did, nothing of it is written and it is done again the usual
// way: a version conflict the writer's stale cache saw is not returned,
// a batch the check refused lands once, at the next seq, and a real
// conflict found optimistically is still one.
func TestPostgres_AnOptimisticCommitThatMissesIsDoneAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	a, b := storetest.OpenStore(t, tg), storetest.OpenStore(t, tg)
	place := func(s *eventlog.Store, stream string, expected int64) ([]events.Event, error) {
		return s.Append(ctx, stream, expected, &events.SessionPlaced{Session: stream, Backend: "local"})
	}
	must := func(evs []events.Event, err error) []events.Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	for v := range int64(3) { // a's caches hold x; its commits are optimistic
		must(place(a, "x", v))
	}
	must(place(a, "y", eventlog.NoStream))
	missed := func(want int64) {
		t.Helper()
		if got := a.Stats().Missed; got != want {
			t.Fatalf("a's optimistic commits missed %d times, want %d", got, want)
		}
	}
	missed(0)

	// b moves x on; a's cache still has x at 3. a's append at x's real
	// version is refused by its cache, and the refusal is checked before
	// it is returned: the check finds b's commit, and the append lands.
	must(place(b, "x", 3))
	if evs, err := place(a, "x", 4); err != nil || evs[0].Version != 5 {
		t.Fatalf("a's append to x at b's version: %v, %v; want version 5", evs, err)
	}
	missed(1)

	// After a miss, commits go the usual way for a while.
	for v := int64(1); v <= 4; v++ {
		must(place(a, "y", v))
	}
	missed(1)
	// A batch written optimistically whose check finds b's commit at
	// the flush: rolled back and written at the next seq.
	must(place(b, "z", eventlog.NoStream))
	evs := must(place(a, "y", 5))
	missed(2)
	tail, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != tail.Seq || evs[0].Version != 6 {
		t.Fatalf("a's append to y after b's commit landed at seq %d version %d; want seq %d (the tail), version 6", evs[0].Seq, evs[0].Version, tail.Seq)
	}

	// A conflict an optimistic commit finds is still one.
	for v := int64(6); v <= 12; v++ {
		must(place(a, "y", v))
	}
	before := a.Stats()
	var conflict *eventlog.ConflictError
	if _, err := place(a, "y", 3); !errors.As(err, &conflict) || conflict.Actual != 13 {
		t.Fatalf("a stale append to y: %v, want a ConflictError at version 13", err)
	}
	if after := a.Stats(); after.Missed != before.Missed {
		t.Fatalf("a real conflict counted as a miss: %+v then %+v", before, after)
	}

	// Every append is in the log once, gap-free, and the log verifies.
	all, err := a.Read(ctx, eventlog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"x": 5, "y": 13, "z": 1}
	got := map[string]int{}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a gap", i, ev.Seq)
		}
		got[ev.Stream]++
		if int64(got[ev.Stream]) != ev.Version {
			t.Fatalf("seq %d: %s version %d, want %d", ev.Seq, ev.Stream, ev.Version, got[ev.Stream])
		}
	}
	for stream, n := range want {
		if got[stream] != n {
			t.Fatalf("stream %s holds %d events, want %d", stream, got[stream], n)
		}
	}
	if a.Stats().Optimistic == 0 {
		t.Fatal("a made no optimistic commit")
	}
	storetest.MustVerify(t, a)
}

// A connection the server ended (a restart, pg_terminate_backend) while
// the writer was idle answers an optimistic commit's BEGIN with the
// server's FATAL message: nothing ran, so the commit is done again on a
// new connection and the append succeeds, once.
func TestPostgres_AnOptimisticCommitOnAnEndedConnectionIsRetried(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	s := storetest.OpenStore(t, tg)
	for v := range int64(3) {
		if _, err := s.Append(ctx, "s", v, placedS(int(v))); err != nil {
			t.Fatal(err)
		}
	}
	last := time.Now()
	if err := tg.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`); err != nil {
		t.Fatal(err)
	}
	// Wait for the server to have ended them (bounded, not timed).
	gone := func() bool {
		err := tg.Exec(t, `SELECT 1 / (SELECT (count(*) = 0)::int FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend')`)
		return err == nil
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for !gone() {
		select {
		case <-wait.Done():
			t.Fatal("the terminated backends are still there")
		case <-time.After(5 * time.Millisecond):
		}
	}
	idle := time.Since(last)
	before := s.Stats()
	evs, err := s.Append(ctx, "s", 3, placedS(3))
	if err != nil {
		t.Fatalf("an append on a connection the server ended: %v, want it done again on a new one", err)
	}
	if evs[0].Version != 4 {
		t.Fatalf("landed at version %d, want 4", evs[0].Version)
	}
	// The writer was idle for less than the optimistic bound (a second)
	// unless the machine stalled: then it began the usual way, which
	// retries a failed BEGIN as before.
	if after := s.Stats(); idle < 500*time.Millisecond && after.Missed-before.Missed != 1 {
		t.Fatalf("after %v idle: %d misses, want the optimistic commit's 1", idle, after.Missed-before.Missed)
	}
	got, err := s.ReadStream(ctx, "s", 1)
	if err != nil || len(got) != 4 {
		t.Fatalf("the stream holds %d events (%v), want 4", len(got), err)
	}
	storetest.MustVerify(t, s)
}
