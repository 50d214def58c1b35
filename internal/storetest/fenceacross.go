package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// testFencedAcrossWriters: a writer that checked a run's lease (and may
// keep the token it read) is fenced as soon as another writer's store
// takes the run over, and both writers' batches stay consistent.
func testFencedAcrossWriters(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	a, other := open(t, tg).Store(), open(t, tg).Store()
	leased := func(s *eventlog.Store, token int64, worker string) {
		t.Helper()
		if _, err := s.Append(ctx, events.LeaseStream("r1"), eventlog.AnyVersion, events.RunLeased{Run: "r1", Worker: worker, Token: token, ExpiresAt: time.Now().Add(time.Minute).UnixNano()}); err != nil {
			t.Fatal(err)
		}
	}
	leased(a, 1, "a")
	held := a.In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "s"}, Lease: &eventlog.Lease{Run: "r1", Token: 1}})
	if _, err := held.Append(ctx, "r1", eventlog.NoStream, events.RunStarted{Run: "r1", Workflow: "wf", Seed: "s"}); err != nil {
		t.Fatalf("the holder's append: %v", err)
	}
	// A second append under the lease, which may use what the first read.
	if _, err := held.Append(ctx, "r1", 1, events.RunStarted{Run: "r1", Workflow: "wf", Seed: "s"}); err != nil {
		t.Fatalf("the holder's second append: %v", err)
	}
	leased(other, 2, "b") // the other writer takes the run over
	head, _ := a.Head(ctx)
	_, err := held.Append(ctx, "r1", 2, events.RunFinished{Run: "r1", Status: "ok"})
	var fe *eventlog.FencedError
	if !errors.As(err, &fe) || fe.Token != 1 || fe.Current != 2 {
		t.Fatalf("append under the lease the other writer took = %v, want a *FencedError (1 vs 2)", err)
	}
	if after, _ := a.Head(ctx); after != head {
		t.Fatalf("the refused append wrote: head %v -> %v", head, after)
	}
	taken := other.In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "s"}, Lease: &eventlog.Lease{Run: "r1", Token: 2}})
	if _, err := taken.Append(ctx, "r1", 2, events.RunFinished{Run: "r1", Status: "ok"}); err != nil {
		t.Fatalf("the new holder's append: %v", err)
	}
	MustVerify(t, a)
}
