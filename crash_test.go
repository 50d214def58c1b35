package rath_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// crashChildEnv makes the test binary act as the appending child process.
const crashChildEnv = "RATH_TEST_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild appends pairs of chunks from 8 goroutines forever, printing
// each append only after it returned (so it is durable), until killed.
func crashChild(dir string) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			s, err := rt.NewUserSession(ctx, fmt.Sprint("worker ", g))
			if err != nil {
				say("error %v", err)
				return
			}
			for i := 0; ; i++ {
				c := events.Chunk{Role: "assistant", Content: fmt.Sprintf("%d-%d %s", g, i, strings.Repeat("x", i%500))}
				if s, err = s.Append(ctx, c, c); err != nil {
					say("error %v", err)
					return
				}
				say("ok %s %d %d", s.ID(), s.Version(), s.Len())
			}
		})
	}
	wg.Wait()
}

func TestCrash_SIGKILLDuringAppends(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ack struct {
		version int64
		length  int
	}
	acked := map[string]ack{}
	sc := bufio.NewScanner(out)
	lines := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] == "error" {
			cmd.Process.Kill()
			t.Fatalf("child: %s", sc.Text())
		}
		v, _ := strconv.ParseInt(f[2], 10, 64)
		n, _ := strconv.Atoi(f[3])
		acked[f[1]] = ack{v, n}
		if lines++; lines == 400 {
			// Kill mid-run: appends are in flight on every goroutine.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	cmd.Wait()

	ctx := t.Context()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer rt.Close()
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify after SIGKILL: %+v, %v", rep.Failure, err)
	}
	for id, a := range acked {
		s, err := rt.Session(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged session %s: %v", id, err)
		}
		if s.Version() < a.version || s.Len() < a.length {
			t.Fatalf("session %s is at v%d with %d chunks; the child was told v%d with %d", id, s.Version(), s.Len(), a.version, a.length)
		}
		// Every append wrote a pair after the first user chunk: an odd
		// length means half an append survived.
		if s.Len()%2 != 1 {
			t.Fatalf("session %s has %d chunks: a partial append", id, s.Len())
		}
	}
	// The read model matches the log exactly.
	before, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := projections.Dump(ctx, rt.Store().DB())
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatal("projections after the crash differ from a rebuild")
	}
	t.Logf("%d acknowledged appends over %d sessions, %d events survived", lines, len(acked), rep.Events)
}
