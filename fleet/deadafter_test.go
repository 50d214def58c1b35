package fleet_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
)

// Workers started with different DeadAfter agree on which is dead: each
// is judged by its own, stored with its heartbeat. A holder process with
// a DeadAfter of 6 s (a heartbeat every 1.2 s) keeps its run while a peer
// whose own DeadAfter is 300 ms reaps: the peer expires nothing of a
// worker that beats on its schedule. SIGKILLed, the holder's run is taken
// over by the peer once the holder's 6 s passed without a heartbeat, not
// the peer's 300 ms. On both stores (the column is a migration of each).
func TestFleet_EachWorkerIsJudgedByItsOwnDeadAfter(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testOwnDeadAfter(t, chaosDSN(t, backend))
		})
	}
}

func testOwnDeadAfter(t *testing.T, dsn string) {
	const holderDeadAfter = 6 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	rt, err := openRuntime(ctx, dir, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var log bytes.Buffer
	var logMu sync.Mutex
	peer, err := fleet.Open(ctx, rt, fleet.Options{WorkerID: "peer", LeaseTime: time.Minute, DeadAfter: 300 * time.Millisecond,
		Resolve: tally, Log: lockedWriter{&logMu, &log}})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	in, err := rt.NewUserSession(ctx, "tally")
	if err != nil {
		t.Fatal(err)
	}
	run, err := peer.Submit(ctx, "tally", in, map[string]string{"workspace": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wdir := t.TempDir()
	if dsn == "-" {
		wdir = dir
	}
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s hold", workerEnv, wdir, dsn), deadAfterEnv+"="+holderDeadAfter.String(),
		leaseEnv+"=1m") // its lease outlives its DeadAfter: the takeover comes from the judgement
	out, _ := holder.StdoutPipe()
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	r := bufio.NewReader(out)
	ready, _ := r.ReadString('\n')
	if !strings.HasPrefix(ready, "ready ") {
		t.Fatalf("holder did not start: %q", ready)
	}
	holderID := strings.TrimSpace(strings.TrimPrefix(ready, "ready "))
	if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "holding") {
		t.Fatalf("holder said %q", l)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- peer.Run(runCtx, 5*time.Second) }()
	defer func() { stop(); <-done }()

	// Ten of the peer's DeadAfter, and more than two of the holder's
	// heartbeats: a peer judging by its own bound expires the lease here.
	time.Sleep(3 * time.Second)
	if ws := leaseHolders(t, rt, run); len(ws) != 1 || ws[0] != holderID {
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("the live holder's lease was taken: holders %v\n%s", ws, log.String())
	}

	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	if st, err := fleet.Wait(ctx, rt, run); err != nil || st[run] != rath.RunOK {
		t.Fatalf("wait: %v %v", st, err)
	}
	ws, err := fleet.Workers(ctx, rt, true)
	if err != nil {
		t.Fatal(err)
	}
	var lastBeat time.Time
	for _, w := range ws {
		if w.ID == holderID {
			lastBeat = w.HeartbeatAt
			// Its peers judged it dead; so does the list (its lease
			// time, a minute, has not passed).
			if w.Live {
				t.Fatalf("the killed holder, whose run was taken over, is listed live: %+v", w)
			}
		}
	}
	evs, err := rt.Store().ReadStream(ctx, events.LeaseStream(run), 1)
	if err != nil {
		t.Fatal(err)
	}
	// The peer's first lease event is the expiry of the holder's lease,
	// written at the time it judged (its ExpiresAt).
	var expired time.Time
	for _, ev := range evs {
		p, _ := ev.Decode()
		if l := p.(*events.RunLeased); l.Worker == "peer" {
			expired = time.Unix(0, l.ExpiresAt)
			break
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if lastBeat.IsZero() || expired.IsZero() || !strings.Contains(log.String(), "expired the lease of "+holderID) {
		t.Fatalf("last heartbeat %v, expiry %v; the peer's log:\n%s", lastBeat, expired, log.String())
	}
	if silent := expired.Sub(lastBeat); silent < holderDeadAfter {
		t.Fatalf("the peer expired the holder's lease %v after its last heartbeat, before the holder's DeadAfter (%v)", silent, holderDeadAfter)
	}
}

// leaseHolders are the workers of a run's lease events, in order.
func leaseHolders(t *testing.T, rt *rath.Runtime, run string) []string {
	t.Helper()
	evs, err := rt.Store().ReadStream(t.Context(), events.LeaseStream(run), 1)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.(*events.RunLeased).Worker)
	}
	return out
}
