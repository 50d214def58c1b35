package storetest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// childEnv makes the test binary an appending process: "TARGET INDEX N".
const childEnv = "RATH_STORETEST_APPENDER"

// Bounds of the multi-process test: enough appends that the SIGKILL
// lands with the others' appends in flight (it comes after a quarter of
// the killed process's), few enough that the test stays a fraction of
// its package's time under -race.
const (
	mpProcs   = 8
	mpAppends = 250
)

// appender appends n events, every fifth on a stream all processes share,
// and prints "seq hash" for each acknowledged append, so the parent knows
// what must survive whatever happens to this process next.
func appender(spec string) int {
	f := strings.Fields(spec)
	target, index := f[0], f[1]
	n, _ := strconv.Atoi(f[2])
	ctx := context.Background()
	opts := eventlog.Options{Path: filepath.Join(target, rath.DBFile)}
	if eventlog.IsPostgresDSN(target) {
		opts = eventlog.Options{DSN: target}
	}
	s, err := eventlog.Open(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	var slowest time.Duration // one append's wait, the writers' fairness
	defer func() {
		st := s.Stats()
		fmt.Fprintf(os.Stderr, "commits %d appends %d slowest append %s\n", st.Commits, st.Requests, slowest)
		s.Close()
	}()
	out := bufio.NewWriter(os.Stdout)
	for i := range n {
		stream := "proc-" + index
		if i%5 == 0 {
			stream = "shared"
		}
		t0 := time.Now()
		evs, err := s.Append(ctx, stream, eventlog.AnyVersion, &events.SessionPlaced{Session: stream, Backend: "local", Spec: fmt.Sprintf("%s/%d", index, i)})
		slowest = max(slowest, time.Since(t0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			return 3
		}
		fmt.Fprintf(out, "%d %s\n", evs[0].Seq, evs[0].Hash)
		out.Flush()
	}
	return 0
}

// multiProcess runs mpProcs appending processes against one database,
// SIGKILLs one of them mid-stream, and checks that the log verifies, has
// no gap, and holds every append any process saw acknowledged.
func multiProcess(t *testing.T, tg storetest.Target) {
	target := tg.Dir
	if tg.DSN != "" {
		target = tg.DSN
	}
	migrateTo := filepath.Join(tg.Dir, rath.DBFile)
	if tg.DSN != "" {
		migrateTo = tg.DSN
	}
	if err := rath.Migrate(t.Context(), migrateTo); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, mpProcs)
	killed := make(chan int, 1)
	for p := range mpProcs {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", childEnv, target, p, mpAppends))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			lines := 0
			for sc.Scan() {
				var seq int64
				var hash string
				if _, err := fmt.Sscanf(sc.Text(), "%d %s", &seq, &hash); err != nil {
					errs <- fmt.Errorf("process %d printed %q", p, sc.Text())
					continue
				}
				mu.Lock()
				acked[seq] = hash
				mu.Unlock()
				if lines++; p == 0 && lines == mpAppends/4 {
					cmd.Process.Signal(syscall.SIGKILL) // mid-stream, with appends in flight
					killed <- lines
				}
			}
			err := cmd.Wait()
			if p == 0 && lines >= mpAppends/4 {
				return // killed
			}
			if err != nil {
				errs <- fmt.Errorf("process %d: %v\n%s", p, err, stderr.String())
			}
			t.Logf("process %d: %s", p, strings.TrimSpace(stderr.String()))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case n := <-killed:
		t.Logf("process 0 killed after %d acknowledged appends", n)
	default:
		t.Fatal("process 0 ended before it could be killed")
	}
	s := storetest.OpenStore(t, tg)
	rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
	if min := int64((mpProcs-1)*mpAppends + mpAppends/4); rep.Head.Seq < min {
		t.Fatalf("head %d, want at least %d", rep.Head.Seq, min)
	}
	seq := int64(0)
	for ev, err := range s.Scan(t.Context(), eventlog.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if seq++; ev.Seq != seq {
			t.Fatalf("gap: seq %d after %d", ev.Seq, seq-1)
		}
		if h, ok := acked[ev.Seq]; ok && h != ev.Hash {
			t.Fatalf("seq %d: stored %s, acknowledged %s", ev.Seq, ev.Hash, h)
		}
		delete(acked, ev.Seq)
	}
	if len(acked) > 0 {
		t.Fatalf("%d acknowledged appends are missing from the log", len(acked))
	}
	t.Logf("%d events from %d processes, verified, gap-free", seq, mpProcs)
}

func TestMultiProcess_SQLite(t *testing.T) {
	t.Parallel()
	multiProcess(t, sqliteTarget(t))
}

func TestMultiProcess_Postgres(t *testing.T) {
	t.Parallel()
	multiProcess(t, postgresTarget(t))
}
