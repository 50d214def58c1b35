package fleet_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
)

// A worker whose clock is an hour ahead does not take a run whose lease
// a peer holds live, on PostgreSQL: leases are on the database's clock.
// (On SQLite the store is one machine's and a skewed clock would take
// it; that bound is documented.) The run's extra jobs reach the skewed
// worker while the holder is inside a tool call; the call runs once.
func TestFleet_ASkewedClockTakesNoLiveLease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dsn, err := server.CreateDatabase(ctx, fmt.Sprintf("fleetclock%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	var mu sync.Mutex
	ran := map[string]int{} // executions of each tool call, by worker
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	open := func(id string, clock func() time.Time) (*fleet.Fleet, *rath.Runtime) {
		rt, err := openRuntime(ctx, t.TempDir(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		fl, err := fleet.Open(ctx, rt, fleet.Options{WorkerID: id, LeaseTime: 2 * time.Second, DeadAfter: time.Second, Clock: clock,
			Resolve: func(_ context.Context, _ string, params map[string]string) (flow.Workflow, error) {
				return tallyWith(params["workspace"], tallyModel{}, 0, func() {
					mu.Lock()
					ran[id]++
					mu.Unlock()
					once.Do(func() { close(entered); <-release })
				})
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fl.Close() })
		return fl, rt
	}
	holder, rt := open("holder", nil)
	skewed, _ := open("skewed", func() time.Time { return time.Now().Add(time.Hour) })
	in, err := rt.NewUserSession(ctx, "tally")
	if err != nil {
		t.Fatal(err)
	}
	run, err := holder.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); holder.Run(runCtx, 5*time.Second) }()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the holder never started the tool call")
	}
	wg.Add(1)
	go func() { defer wg.Done(); skewed.Run(runCtx, 5*time.Second) }()
	// Several lease times of the skewed worker's view, with a fresh job
	// for the run each half second.
	for range 8 {
		if err := skewed.EnqueueAgain(ctx, run); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	close(release)
	if st, err := fleet.Wait(ctx, rt, run); err != nil {
		t.Fatalf("wait: %v %v", st, err)
	}
	evs, err := rt.Store().ReadStream(ctx, events.LeaseStream(run), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		p, _ := ev.Decode()
		if l := p.(*events.RunLeased); l.Worker != "holder" {
			t.Errorf("the lease went to %s (token %d) while the holder's was live", l.Worker, l.Token)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if ran["skewed"] != 0 || ran["holder"] != 3 {
		t.Errorf("tool calls ran %v, want 3 on the holder and none on the skewed worker", ran)
	}
}

// The other half: a worker whose holder died is taken over on time
// though both clocks are off, on PostgreSQL. The holder (a process an
// hour ahead) takes the run and hangs in its first tool call; it is
// SIGKILLed; a peer an hour behind takes the run over and finishes it.
// On the machines' clocks the holder's lease and heartbeat would look
// live to that peer for two hours more.
func TestFleet_ASkewedClockKeepsNoDeadLease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dsn, err := server.CreateDatabase(ctx, fmt.Sprintf("fleetclock%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := openRuntime(ctx, t.TempDir(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var log bytes.Buffer
	var logMu sync.Mutex
	taker, err := fleet.Open(ctx, rt, fleet.Options{WorkerID: "taker", LeaseTime: 10 * time.Second, DeadAfter: 3 * time.Second,
		Clock: func() time.Time { return time.Now().Add(-time.Hour) }, Resolve: tally, Log: lockedWriter{&logMu, &log}})
	if err != nil {
		t.Fatal(err)
	}
	defer taker.Close()
	ws := t.TempDir()
	in, err := rt.NewUserSession(ctx, "tally")
	if err != nil {
		t.Fatal(err)
	}
	run, err := taker.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s hold", workerEnv, t.TempDir(), dsn), skewEnv+"=1h")
	out, _ := holder.StdoutPipe()
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	r := bufio.NewReader(out)
	ready, _ := r.ReadString('\n')
	holderID := strings.TrimSpace(strings.TrimPrefix(ready, "ready "))
	if !strings.HasPrefix(ready, "ready ") {
		t.Fatalf("holder did not start: %q", ready)
	}
	if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "holding") {
		t.Fatalf("holder said %q", l)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- taker.Run(runCtx, 5*time.Second) }()
	defer func() { stop(); <-done }()
	if st, err := fleet.Wait(ctx, rt, run); err != nil || st[run] != rath.RunOK {
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("the dead holder's run was not taken over: %v %v\n%s", st, err, log.String())
	}
	evs, err := rt.Store().ReadStream(ctx, events.LeaseStream(run), 1)
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, ev := range evs {
		p, _ := ev.Decode()
		holders = append(holders, p.(*events.RunLeased).Worker)
	}
	if len(holders) == 0 || holders[0] != holderID || !slices.Contains(holders, "taker") {
		t.Fatalf("lease holders %v, want %s then taker", holders, holderID)
	}
}

// lockedWriter is a Log for a test that reads it while the fleet writes.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
