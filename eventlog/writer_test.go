package eventlog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
)

// A commit by another connection while the writer reads the chain tail
// at open must not leave it with a stale tail: every append after it used
// to fail with "UNIQUE constraint failed: events.seq".
func TestWriter_CommitDuringOpenIsNotMissed(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	other := MustOpenStore(t, eventlog.Options{Path: path})
	if _, err := other.Append(ctx, "a", eventlog.NoStream, placed("a", "x")); err != nil {
		t.Fatal(err)
	}
	injected := false
	opts := eventlog.WithAfterVersionRead(eventlog.Options{Path: path}, func() {
		if injected {
			return
		}
		injected = true
		if _, err := other.Append(ctx, "b", eventlog.NoStream, placed("b", "x")); err != nil {
			t.Error(err)
		}
	})
	s, err := eventlog.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !injected {
		t.Fatal("the hook did not run")
	}
	for i := range 5 {
		if _, err := s.Append(ctx, "c", int64(i), placed("c", fmt.Sprint(i))); err != nil {
			t.Fatalf("append %d after a commit during open: %v", i, err)
		}
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 7 {
		t.Fatalf("verify = %+v, %v; want 7 events", rep, err)
	}
}

// An insert that collides because the writer's cache went stale is
// redone after a reload, not failed. Two stores on one in-memory database
// skip the data_version check (each believes it is the only writer), so
// the second store's appends collide every time the first one wrote.
func TestWriter_CollidingInsertReloadsAndRetries(t *testing.T) {
	ctx := t.Context()
	name, _ := inMemoryDatabase(t, "retry")
	open := func() *eventlog.Store {
		s, err := eventlog.Open(ctx, eventlog.Options{Path: name, InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	for i := range 5 {
		if _, err := a.Append(ctx, "a", int64(i), placed("a", fmt.Sprint(i))); err != nil {
			t.Fatalf("a append %d: %v", i, err)
		}
		if _, err := b.Append(ctx, "b", int64(i), placed("b", fmt.Sprint(i))); err != nil {
			t.Fatalf("b append %d: %v", i, err)
		}
	}
	// A stale head is caught too: b's cached head of "a" is behind.
	if _, err := b.Append(ctx, "a", eventlog.AnyVersion, placed("a", "from b")); err != nil {
		t.Fatalf("b append to a: %v", err)
	}
	if rep, err := a.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 11 {
		t.Fatalf("verify = %+v, %v; want 11 events", rep, err)
	}
}

// Several connections append to one file while others keep opening and
// closing the store (each open reads the tail): no append fails.
func TestWriter_ManyConnectionsAppendAndReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	migrate(t, path)
	const writers, per, reopeners, reopens = 3, 60, 2, 30
	var wg sync.WaitGroup
	for w := range writers {
		s, err := eventlog.Open(ctx, eventlog.Options{Path: path, Synchronous: "NORMAL"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		wg.Go(func() {
			stream := fmt.Sprintf("w%d", w)
			for i := range per {
				if _, err := s.Append(ctx, stream, int64(i), placed(stream, fmt.Sprint(i))); err != nil {
					t.Errorf("%s append %d: %v", stream, i, err)
					return
				}
			}
		})
	}
	for r := range reopeners {
		wg.Go(func() {
			stream := fmt.Sprintf("r%d", r)
			for i := range reopens {
				s, err := eventlog.Open(ctx, eventlog.Options{Path: path, Synchronous: "NORMAL"})
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.Append(ctx, stream, int64(i), placed(stream, fmt.Sprint(i)))
				s.Close()
				if err != nil {
					t.Errorf("%s append %d after reopen: %v", stream, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	s := MustOpenStore(t, eventlog.Options{Path: path})
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != writers*per+reopeners*reopens {
		t.Fatalf("verify = %+v, %v; want %d events", rep, err, writers*per+reopeners*reopens)
	}
}

// helperAppendEnv makes the test binary a child process that appends.
const helperAppendEnv = "RATH_EVENTS_TEST_APPEND"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperAppendEnv); spec != "" {
		os.Exit(helperAppend(spec))
	}
	if spec := os.Getenv(helperProcBenchEnv); spec != "" {
		os.Exit(helperProcBench(spec))
	}
	if path := os.Getenv(helperHoldGateEnv); path != "" {
		os.Exit(helperHoldGate(path))
	}
	os.Exit(m.Run())
}

// helperAppend runs in a child process: "PATH|STREAM|N" opens the store N
// times and appends one event each time.
func helperAppend(spec string) int {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	ctx := context.Background()
	for i := range n {
		s, err := eventlog.Open(ctx, eventlog.Options{Path: parts[0], Synchronous: "NORMAL"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, err = s.Append(ctx, parts[1], int64(i), placed(parts[1], fmt.Sprint(i)))
		s.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "append %d: %v\n", i, err)
			return 1
		}
	}
	return 0
}

// Four OS processes each open the store and append, over and over.
func TestWriter_ProcessesAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "rath.db")
	migrate(t, path)
	const procs, per = 4, 40
	// Verify in a loop meanwhile: no false alarm.
	verifier := MustOpenStore(t, eventlog.Options{Path: path})
	stop := make(chan struct{})
	verified := make(chan int)
	go func() {
		n := 0
		defer func() { verified <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rep, err := verifier.Verify(t.Context(), eventlog.VerifyOptions{})
			if err != nil || !rep.OK() {
				t.Errorf("verify while processes append = %+v, %v", rep, err)
				return
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|p%d|%d", helperAppendEnv, path, p, per))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("process %d: %v\n%s", p, err, out)
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("%d verifications while appending", <-verified)
	s := MustOpenStore(t, eventlog.Options{Path: path})
	if rep, err := s.Verify(ctx(t), eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != procs*per {
		t.Fatalf("verify = %+v, %v; want %d events", rep, err, procs*per)
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// Verify reads one snapshot: appends running meanwhile, each with blobs,
// never make it report a missing blob or a broken chain.
func TestVerify_NoFalseAlarmsWhileAppending(t *testing.T) {
	c := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path, BlobThreshold: 512})
	w, err := eventlog.Open(c, eventlog.Options{Path: path, BlobThreshold: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const appends = 400
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range appends {
			out := []byte(fmt.Sprintf("output %d %s", i, strings.Repeat("x", i%900)))
			ret := events.ToolReturned{Session: "s", CallID: fmt.Sprint("c", i), Tool: "t", OutputRef: eventlog.BlobHash(out),
				Error: strings.Repeat("e", i%1000)} // sometimes a payload blob too
			if _, err := w.AppendWrites(c, eventlog.Write{Stream: "s", Expected: int64(i), Events: []events.Payload{ret}, Blobs: [][]byte{out}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	checks := 0
	for running := true; running; checks++ {
		select {
		case <-done:
			running = false
		default:
		}
		rep, err := s.Verify(c, eventlog.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("verify %d while appending: %v", checks, rep.Failure)
		}
	}
	if checks < 5 {
		t.Fatalf("only %d verifications ran during the appends", checks)
	}
	t.Logf("%d verifications, no false alarm", checks)
}

// A NULL run_id and an empty one hash differently (format 2); format 1,
// kept for old events, did not tell them apart.
func TestHash_NullAndEmptyRunIDDiffer(t *testing.T) {
	if eventlog.EventHashForTest(2, "", false) == eventlog.EventHashForTest(2, "", true) {
		t.Fatal("format 2 hashes NULL and '' run_id the same")
	}
	if eventlog.EventHashForTest(1, "", false) != eventlog.EventHashForTest(1, "", true) {
		t.Fatal("format 1 changed: old chains would stop verifying")
	}
	if eventlog.EventHashForTest(2, "r", true) != eventlog.EventHashForTest(1, "r", true) {
		t.Fatal("format 2 changed the hash of a set run_id")
	}
}

// Editing run_id from NULL to ” behind the store's back is caught, both
// in events hashed with format 2 and in old format-1 events.
func TestVerify_RunIDNullToEmptyIsCaught(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			c := t.Context()
			path := filepath.Join(t.TempDir(), "rath.db")
			s := MustOpenStore(t, eventlog.Options{Path: path})
			for i := range 3 {
				if _, err := s.Append(c, "s", int64(i), placed("s", fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			db := rawDB(t, path)
			if legacy {
				mustExec(t, db, `DROP TRIGGER events_no_update`)
				if err := eventlog.RewriteAsFormat1(db, nil); err != nil {
					t.Fatal(err)
				}
				mustExec(t, db, `CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'no'); END`)
				// Opened again, the old log gets its Merkle tree.
				s = MustOpenStore(t, eventlog.Options{Path: path})
			}
			if rep, _ := s.Verify(c, eventlog.VerifyOptions{}); !rep.OK() {
				t.Fatalf("before the edit: %v", rep.Failure)
			}
			mustExec(t, db, `DROP TRIGGER events_no_update`, `UPDATE events SET run_id = '' WHERE seq = 2`)
			rep, _ := s.Verify(c, eventlog.VerifyOptions{})
			if rep.OK() || rep.Failure.Seq != 2 {
				t.Fatalf("verify after run_id NULL -> '' = %+v, want a failure at seq 2", rep.Failure)
			}
		})
	}
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

var _ = errors.Is

// inMemoryDatabase makes a migrated in-memory database named after the
// test and returns its name and the connection that keeps it alive until
// the test ends.
func inMemoryDatabase(t *testing.T, prefix string) (string, *sql.DB) {
	t.Helper()
	name := prefix + "-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
	keeper, err := sql.Open("sqlite", eventlog.DSN(name, true, "busy_timeout(10000)"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keeper.Close() })
	keeper.SetMaxOpenConns(1)
	if _, err := migrations.Up(t.Context(), keeper); err != nil {
		t.Fatal(err)
	}
	return name, keeper
}
