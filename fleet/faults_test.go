package fleet_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/replay"
)

// chaos is one fault-injection scenario: a store, worker processes that
// record every execution of a tool call in an effect file outside every
// workspace, and submitted runs.
type chaos struct {
	t      *testing.T
	ctx    context.Context
	dir    string // the SQLite store, or "" on PostgreSQL
	dsn    string // "-" for SQLite
	rt     *rath.Runtime
	fl     *fleet.Fleet
	ws     string
	effect string
	env    []string
	procs  []*exec.Cmd
	// log is what the workers wrote to stderr (their lines about runs).
	log struct {
		sync.Mutex
		b bytes.Buffer
	}
}

// Write collects the workers' stderr, and passes it on to the test's.
func (c *chaos) Write(p []byte) (int, error) {
	c.log.Lock()
	c.log.b.Write(p)
	c.log.Unlock()
	return os.Stderr.Write(p)
}

// logged reports whether the workers wrote a line holding all of parts.
func (c *chaos) logged(parts ...string) bool {
	c.log.Lock()
	defer c.log.Unlock()
	for _, l := range strings.Split(c.log.b.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func newChaos(t *testing.T, ctx context.Context, dsn string, env ...string) *chaos {
	t.Helper()
	c := &chaos{t: t, ctx: ctx, dsn: dsn, ws: t.TempDir(), effect: filepath.Join(t.TempDir(), "effects"), env: env}
	local := t.TempDir()
	if dsn == "-" {
		c.dir = local
	}
	var err error
	if c.rt, err = openRuntime(ctx, local, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.rt.Close() })
	if c.fl, err = fleet.Open(ctx, c.rt, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.fl.Close() })
	return c
}

func (c *chaos) submit(n int) []string {
	c.t.Helper()
	var ids []string
	for i := range n {
		in, err := c.rt.NewUserSession(c.ctx, fmt.Sprintf("tally %d", i))
		if err != nil {
			c.t.Fatal(err)
		}
		id, err := c.fl.Submit(c.ctx, "tally", in, map[string]string{"workspace": c.ws})
		if err != nil {
			c.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// worker starts a worker process and waits until it is ready.
func (c *chaos) worker() *exec.Cmd {
	c.t.Helper()
	wdir := c.dir
	if wdir == "" {
		wdir = c.t.TempDir()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), fmt.Sprintf("%s=%s %s", workerEnv, wdir, c.dsn), effectEnv+"="+c.effect), c.env...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = c
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	if l, _ := bufio.NewReader(out).ReadString('\n'); !strings.HasPrefix(l, "ready ") {
		c.t.Fatalf("worker did not start: %q", l)
	}
	c.procs = append(c.procs, cmd)
	c.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	return cmd
}

// doneCount is how many of the runs finished ok.
func (c *chaos) doneCount(ids []string) int {
	n := 0
	for _, id := range ids {
		if r, err := c.rt.Reader().Run(c.ctx, id); err == nil && r.Status == rath.RunOK {
			n++
		}
	}
	return n
}

// check waits for every run to finish ok and checks the guarantee: each
// tool call ran once, except those in flight at a fault (a crash, a stop
// past the lease, a store failure), which ran again once per fault they
// met: at most 1 + the number of resumes of its run that found it in
// flight (run.resumed's Interrupted), and never more than `most` times.
// Every run replays and the log verifies.
func (c *chaos) check(ids []string, most int) {
	c.t.Helper()
	status, err := fleet.Wait(c.ctx, c.rt, ids...)
	if err != nil {
		for _, id := range ids {
			r, _ := c.rt.Reader().Run(context.Background(), id)
			c.t.Logf("run %s: %s %s", id, r.Status, r.Error)
		}
		c.t.Fatalf("wait: %v %v", status, err)
	}
	b, _ := os.ReadFile(c.effect)
	runs := map[string]bool{}
	for _, id := range ids {
		runs[id] = true
	}
	count := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if run, _, ok := strings.Cut(l, " "); ok && runs[run] {
			count[l]++
		}
	}
	doubled := 0
	for _, id := range ids {
		caught := c.interruptions(id)
		for n := range 3 {
			k := fmt.Sprintf("%s tally-%d", id, n)
			got, want := count[k], min(1+caught[fmt.Sprint("t", n)], most)
			if got > 1 {
				doubled++
			}
			if got < 1 || got > want {
				c.t.Errorf("%s ran %d times, want 1 to %d (1 + the %d faults it was in flight at, at most %d)", k, got, want, caught[fmt.Sprint("t", n)], most)
			}
		}
		rep, err := replay.Run(c.ctx, c.rt, id, mustTally(c.t, c.ws))
		if err != nil || !rep.OK() || rep.Matched != rep.Recorded {
			c.t.Fatalf("replay %s = %+v, %v", id, rep, err)
		}
	}
	c.t.Logf("%d runs done; %d tool calls ran more than once", len(ids), doubled)
	rep, err := c.rt.Verify(c.ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		c.t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// interruptions counts, per tool call id of run, the resumes of the run
// that found the call in flight (started, not returned): each is one
// fault the call met, and may have run it once more.
func (c *chaos) interruptions(run string) map[string]int {
	c.t.Helper()
	evs, err := c.rt.Store().ReadStream(c.ctx, events.ResumeStream(run), 1)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			c.t.Fatal(err)
		}
		if r, ok := p.(*events.RunResumed); ok {
			for _, call := range r.Interrupted {
				out[call.CallID]++
			}
		}
	}
	return out
}

// Extra jobs for runs that are being executed (as a takeover leaves them:
// the reapers', River's rescue of the dead worker's job) do nothing: no
// worker executes a run twice at once, not even the one holding it, and
// with no fault every tool call runs exactly once.
func TestFleet_DuplicateJobsRunNothingTwice(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			// No fault here: a worker is judged dead only after 10 s
			// without a heartbeat (not 2 s), so a machine loaded by
			// other tests does not make a takeover this test would count.
			c := newChaos(t, ctx, chaosDSN(t, backend), slowEnv+"=300ms", deadAfterEnv+"=10s")
			// Fewer runs than the workers' slots: a duplicate job is taken
			// while its run is still going.
			ids := c.submit(6)
			c.worker()
			c.worker()
			// While the runs go, each gets another job every 100 ms.
			for c.doneCount(ids) < len(ids) && ctx.Err() == nil {
				for _, id := range ids {
					if err := c.fl.EnqueueAgain(ctx, id); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
			c.check(ids, 1)
		})
	}
}

func chaosDSN(t *testing.T, backend string) string {
	if backend == "sqlite" {
		return "-"
	}
	dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("fleet%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// A store that fails for a while (SQLite's write lock held past the
// busy timeout by another process; the PostgreSQL server restarted)
// suspends the runs it meets, like a provider outage: the fleet tries
// them again and every run ends done, with no call run twice that had
// returned.
func TestFleet_TransientStoreFaultsSuspendRuns(t *testing.T) {
	t.Parallel()
	t.Run("sqlite-busy", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		c := newChaos(t, ctx, "-", slowEnv+"=200ms", busyEnv+"=300ms")
		ids := c.submit(12)
		c.worker()
		for c.doneCount(ids) < 1 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		// Another process holds the write lock for longer than the
		// workers wait for it.
		db, err := sql.Open("sqlite", "file:"+filepath.Join(c.dir, "rath.db")+"?_pragma=busy_timeout(10000)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// Held a little past the busy timeout, again and again until a
		// run met it (only a write that begins early in a hold waits past
		// the timeout; with a fixed count, runs could finish before any
		// did, and so may all the runs: then more are submitted): the
		// write that waited fails, and what the run writes next gets
		// through.
		holds := 0
		for ; holds < 30 && !c.logged("handed back after attempt", "database is busy"); holds++ {
			if c.doneCount(ids) == len(ids) {
				// Every run ended before one met a hold (a slow
				// machine): give the holds more writes to meet.
				ids = append(ids, c.submit(4)...)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A write takes the write lock whatever the driver's BEGIN did.
			if _, err := tx.ExecContext(ctx, `CREATE TABLE chaos_lock (x)`); err != nil {
				t.Fatal(err)
			}
			time.Sleep(450 * time.Millisecond)
			tx.Rollback()
			time.Sleep(300 * time.Millisecond)
		}
		t.Logf("%d holds of the write lock until a run met one", holds)
		c.check(ids, 1+holds)
		// The fault was met: a run was handed back on a busy store and
		// retried (without the suspension, it would have ended failed,
		// and check would have said so).
		if !c.logged("handed back after attempt", "database is busy") {
			t.Fatal("no run met the busy store: the test proved nothing")
		}
	})
	t.Run("postgres-restart", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		srv, err := pgtest.Start(ctx, pgtest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		dsn, err := srv.CreateDatabase(ctx, "restart")
		if err != nil {
			t.Fatal(err)
		}
		c := newChaos(t, ctx, dsn, slowEnv+"=200ms")
		ids := c.submit(6)
		c.worker()
		for c.doneCount(ids) < 1 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		srv.Kill()
		time.Sleep(500 * time.Millisecond)
		if err := srv.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		c.check(ids, 2)
	})
}
