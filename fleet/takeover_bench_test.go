package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
)

// How long after a worker's SIGKILL another worker holds its run, with
// the default DeadAfter (the README's takeover figure), on each store.
// Each iteration submits a run, lets a worker process take it and hang
// in its first tool call, kills that worker and times until a live
// peer's lease on the run is recorded.
func BenchmarkFleet_TakeoverAfterSIGKILL(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) { benchTakeover(b, backend) })
	}
}

func benchTakeover(b *testing.B, backend string) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	dir, dsn := b.TempDir(), "-"
	if backend == "postgres" {
		var err error
		if dsn, err = server.CreateDatabase(ctx, fmt.Sprintf("takeover%d", dbs.Add(1))); err != nil {
			b.Fatal(err)
		}
	}
	rt, err := openRuntime(ctx, dir, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	fl, err := fleet.Open(ctx, rt, fleet.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fl.Close()
	ws := b.TempDir()
	start := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", workerEnv, dir, dsn, mode), defaultsEnv+"=1")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(out)
		if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "ready ") {
			b.Fatalf("worker did not start: %q", l)
		}
		go func() {
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		}()
		return cmd
	}
	peer := start("normal")
	defer func() { peer.Process.Signal(syscall.SIGTERM); peer.Wait() }()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		peer.Process.Signal(syscall.SIGSTOP) // so that the holder takes the run
		holder := start("hold")
		in, _ := rt.NewUserSession(ctx, "tally")
		run, err := fl.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
		if err != nil {
			b.Fatal(err)
		}
		for ctx.Err() == nil {
			if r, err := rt.Reader().Run(ctx, run); err == nil && r.Status == "running" {
				if evs, _ := rt.Store().ReadStream(ctx, run, 1); len(evs) > 0 {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // in its tool call
		peer.Process.Signal(syscall.SIGCONT)
		killed := time.Now()
		b.StartTimer()
		holder.Process.Signal(syscall.SIGKILL)
		holder.Wait()
		for ctx.Err() == nil {
			evs, _ := rt.Store().ReadStream(ctx, events.LeaseStream(run), 1)
			if n := len(evs); n > 0 {
				p, _ := evs[n-1].Decode()
				if l := p.(*events.RunLeased); !l.Renewal && l.ExpiresAt > time.Now().UnixNano() && n > 1 {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		total += time.Since(killed)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/takeover")
}
