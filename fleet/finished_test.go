package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
)

// A run its worker finished keeps the lease it ran under: no release is
// written for it, no later job or holder takes it, and fleet.Hold holds
// nothing for a resume of it.
func TestFleet_AFinishedRunIsNotReleasedNorHeld(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	f, err := fleet.Open(ctx, rt, fleet.Options{Resolve: tally})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := rt.NewUserSession(ctx, "count")
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.Submit(ctx, "tally", in, map[string]string{"workspace": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, time.Second) }()
	status, err := fleet.Wait(ctx, rt, id)
	stop()
	<-done
	if err != nil || status[id] != rath.RunOK {
		t.Fatalf("wait = %v, %v", status, err)
	}
	leases, err := rt.Store().ReadStream(ctx, events.LeaseStream(id), 1)
	if err != nil || len(leases) == 0 {
		t.Fatalf("lease stream %v, %v", leases, err)
	}
	for _, ev := range leases {
		p, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if l := p.(*events.RunLeased); l.Renewal && l.ExpiresAt <= ev.At.UnixNano() {
			t.Fatalf("a release was written at seq %d", ev.Seq)
		}
	}
	// The worker's lease is still live; a resume of the finished run is
	// not refused as held, and takes no lease.
	_, lease, release, err := fleet.Hold(ctx, rt, id, "resume:test", time.Minute)
	if err != nil || lease != nil {
		t.Fatalf("hold of a finished run: lease %v, %v; want none", lease, err)
	}
	release()
	if after, _ := rt.Store().ReadStream(ctx, events.LeaseStream(id), 1); len(after) != len(leases) {
		t.Fatalf("the hold wrote %d lease events", len(after)-len(leases))
	}
}
