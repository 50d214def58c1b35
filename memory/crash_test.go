package memory_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
)

// crashEnv names the runtime directory a re-executed test binary works in
// as the child of TestLocal_CrashWhileIndexing.
const crashEnv = "RATH_MEMORY_CRASH_CHILD"

var crashNamespaces = []string{"user/ann", "user/bob", "agent/root.coder"}

// TestCrashChild is not a test: it is the body of the process that
// TestLocal_CrashWhileIndexing kills. It appends a backlog of memories,
// then opens the local memory (whose catch-up indexes the backlog, one
// "flushed" line per batch) while another goroutine keeps remembering.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process of TestLocal_CrashWhileIndexing")
	}
	ctx := context.Background()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	bulkRemember(t, rt.Store(), crashNamespaces, 6000, 200, 7, newTextGen(1))
	opts := memory.LocalOptions{BatchSize: 250, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	memory.SetAfterFlush(&opts, func(seq int64) { fmt.Printf("flushed %d\n", seq) })
	started := make(chan *memory.Local, 1)
	go func() {
		g := newTextGen(2)
		var m *memory.Local
		for i := 0; ; i++ {
			ns := crashNamespaces[i%len(crashNamespaces)]
			if m == nil {
				select {
				case m = <-started:
				default:
				}
			}
			if m != nil {
				m.Remember(ctx, ns, g.text(200), nil)
				continue
			}
			// OpenLocal is still catching up: append the same event
			// Remember would, straight to the log.
			v, err := rt.Store().StreamVersion(ctx, events.MemoryStream(ns))
			if err == nil {
				rt.Store().Append(ctx, events.MemoryStream(ns), v,
					events.MemoryRemembered{Namespace: ns, ID: memory.DeriveID(ns, v+1), Text: g.text(200)})
			}
		}
	}()
	m, err := memory.OpenLocal(ctx, rt.Store(), filepath.Join(dir, testIndexName), opts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	started <- m
	select {} // wait to be killed
}

func TestLocal_CrashWhileIndexing(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it (SIGKILL: no cleanup runs) while it indexes the backlog.
	flushes := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() && flushes < 6 {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
		if strings.HasPrefix(line, "flushed") {
			flushes++
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	cmd.Wait()
	if flushes < 6 {
		t.Fatalf("child stopped after %d flushes", flushes)
	}

	rt := MustOpenRuntime(t, dir)
	head, err := rt.Store().Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seq, _, _, _, err := memory.IndexState(indexDir(rt))
	if err != nil {
		t.Fatalf("index after the kill: %v", err)
	}
	if seq == 0 || seq >= head.Seq {
		t.Fatalf("index checkpoint %d, log head %d: the kill did not land mid-indexing", seq, head.Seq)
	}
	t.Logf("killed with the index at seq %d of %d", seq, head.Seq)

	var logs logBuffer
	caught := MustOpenLocal(t, rt, memory.LocalOptions{Logger: logs.logger()})
	if strings.Contains(logs.String(), "rebuilding") {
		t.Errorf("the index was rebuilt instead of caught up:\n%s", logs.String())
	}
	fresh, err := memory.OpenLocal(t.Context(), rt.Store(), filepath.Join(t.TempDir(), "fresh.bleve"), memory.LocalOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()

	cd, ct := caught.Stats()
	fd, ft := fresh.Stats()
	if cd != fd || ct != ft {
		t.Fatalf("caught-up index has %d docs / %d tokens, fresh rebuild %d / %d", cd, ct, fd, ft)
	}
	g := newTextGen(3)
	compared := 0
	for i := range 60 {
		ns, q := crashNamespaces[i%len(crashNamespaces)], g.query()
		a, err := caught.Recall(t.Context(), ns, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fresh.Recall(t.Context(), ns, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("recall %q in %s differs:\n caught up %v\n rebuilt   %v", q, ns, a, b)
		}
		compared += len(a)
	}
	if compared == 0 {
		t.Fatal("no query had hits; the comparison proves nothing")
	}
}
