//go:build soak

package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/internal/pgtest"
)

// soakRuns is how many runs each store's chaos works (RATH_SOAK_RUNS).
func soakRuns() int {
	if n, err := strconv.Atoi(os.Getenv("RATH_SOAK_RUNS")); err == nil && n > 0 {
		return n
	}
	return 200
}

// The long chaos (make soak): runs on three worker processes while, in
// turn, a worker is SIGKILLed and replaced, a worker is SIGSTOPped past
// its lease and continued, every unfinished run gets a duplicate job,
// and (on PostgreSQL) the server restarts. Every run ends done and
// replays, the log verifies, and each tool call ran once, or at most
// once more per fault it was in flight at.
func TestSoak_FleetChaos(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
			defer cancel()
			dsn := "-"
			var srv *pgtest.Server
			if backend == "postgres" {
				var err error
				if srv, err = pgtest.Start(ctx, pgtest.Options{}); err != nil {
					t.Fatal(err)
				}
				defer srv.Stop()
				if dsn, err = srv.CreateDatabase(ctx, "soak"); err != nil {
					t.Fatal(err)
				}
			}
			c := newChaos(t, ctx, dsn, slowEnv+"=500ms")
			ids := c.submit(soakRuns())
			workers := []*exec.Cmd{c.worker(), c.worker(), c.worker()}
			faults := map[string]int{}
			start := time.Now()
			for round := 0; c.doneCount(ids) < len(ids) && ctx.Err() == nil; round++ {
				time.Sleep(2 * time.Second)
				i := rand.IntN(len(workers))
				switch round % 4 {
				case 0:
					workers[i].Process.Signal(syscall.SIGKILL)
					workers[i] = c.worker()
					faults["sigkill"]++
				case 1:
					// Stopped past its lease: its peers expire its leases and
					// take its runs; once continued, it is fenced.
					workers[i].Process.Signal(syscall.SIGSTOP)
					time.Sleep(12 * time.Second)
					workers[i].Process.Signal(syscall.SIGCONT)
					faults["sigstop"]++
				case 2:
					for _, id := range ids {
						c.fl.EnqueueAgain(ctx, id)
					}
					faults["duplicate jobs"]++
				case 3:
					if srv != nil {
						srv.Kill()
						time.Sleep(time.Second)
						if err := srv.Restart(ctx); err != nil {
							t.Fatal(err)
						}
						faults["server restart"]++
					}
				}
			}
			t.Logf("%d runs, faults %v, %v", len(ids), faults, time.Since(start).Round(time.Second))
			c.check(ids, 1+faults["sigkill"]+faults["sigstop"]+faults["server restart"])
			fmt.Fprintf(os.Stderr, "soak %s: %d runs done after %v with faults %v\n", backend, len(ids), time.Since(start).Round(time.Second), faults)
		})
	}
}
