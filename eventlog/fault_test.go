package eventlog_test

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Another connection holds the write lock past the busy timeout: appends
// fail with a *StorageError matching ErrBusy, write nothing, and succeed
// once the lock is released.
func TestStore_BusyLockIsATypedErrorAndNothingIsHalfWritten(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path, BusyTimeout: 150 * time.Millisecond})
	if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "0")); err != nil {
		t.Fatal(err)
	}
	conn := holdWriteLock(t, path)
	start := time.Now()
	big := make([]byte, 64<<10) // a blob too: nothing of it may stay
	_, err := s.AppendWrites(ctx, eventlog.Write{Stream: "s", Expected: 1, Events: []events.Payload{placed("s", "1"), placed("s", "2")}, Blobs: [][]byte{big}})
	var se *eventlog.StorageError
	if !errors.Is(err, eventlog.ErrBusy) || !errors.As(err, &se) {
		t.Fatalf("append under a held lock = %v, want a *StorageError matching ErrBusy", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("gave up after %v, before the busy timeout", waited)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if v, err := s.StreamVersion(ctx, "s"); err != nil || v != 1 {
		t.Fatalf("stream version = %d, %v; the failed append left something", v, err)
	}
	if _, err := s.GetBlob(ctx, eventlog.BlobHash(big)); !errors.Is(err, eventlog.ErrBlobNotFound) {
		t.Fatalf("blob of the failed append: %v", err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := s.Append(ctx, "s", int64(i), placed("s", fmt.Sprint(i))); err != nil {
			t.Fatalf("append %d after the lock was released: %v", i, err)
		}
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 4 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// Another process holds the write gate (a lock on its own open file is
// one the kernel treats as another process's): an append waits for it,
// fails with ErrBusy past the busy timeout having written nothing, and
// one waiting when the holder lets go is written at once.
func TestStore_WriteGateQueuesTheWritersOfEveryProcess(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path, BusyTimeout: 150 * time.Millisecond})
	if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "0")); err != nil {
		t.Fatal(err)
	}
	gate, err := os.OpenFile(path+eventlog.WriteGateSuffix, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the first append left no gate file: %v", err)
	}
	defer gate.Close()
	if err := syscall.Flock(int(gate.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, "s", 1, placed("s", "1"))
	var se *eventlog.StorageError
	if !errors.Is(err, eventlog.ErrBusy) || !errors.As(err, &se) || se.Op != "begin" {
		t.Fatalf("append behind a held gate = %v, want a *StorageError matching ErrBusy", err)
	}

	patient := MustOpenStore(t, eventlog.Options{Path: path})
	type outcome struct {
		at  time.Time
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		_, err := patient.Append(ctx, "s", 1, placed("s", "1"))
		done <- outcome{time.Now(), err}
	}()
	select {
	case o := <-done:
		t.Fatalf("append went past a held gate: %v", o.err)
	case <-time.After(200 * time.Millisecond):
	}
	released := time.Now()
	if err := syscall.Flock(int(gate.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.at.Before(released) {
		t.Fatalf("append waiting at the gate = %v at %v, gate released at %v", o.err, o.at, released)
	}
	// The store whose wait gave up takes the gate again.
	if _, err := s.Append(ctx, "s", 2, placed("s", "2")); err != nil {
		t.Fatalf("append after the gate was released: %v", err)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 3 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// helperHoldGateEnv makes the test binary a child process that takes the
// write gate of the store at its path, says so, and waits to be killed.
const helperHoldGateEnv = "RATH_EVENTS_TEST_HOLD_GATE"

func helperHoldGate(path string) int {
	f, err := os.OpenFile(path+eventlog.WriteGateSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	select {}
}

// A process dies holding the write gate: the kernel releases its lock,
// and the append that was waiting for it is written.
func TestStore_WriteGateOfAKilledProcessIsReleased(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperHoldGateEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("the holder printed %q, %v", line, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "0"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("append went past the gate another process holds: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := <-done; err != nil {
		t.Fatalf("append after the holder was killed: %v", err)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 1 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// A writer kept waiting for SQLite's write lock closes the write gate
// behind it, so writers arriving meanwhile wait at the gate, and opens it
// again once it has the lock.
func TestStore_AWriterKeptWaitingClosesTheGate(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path})
	if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "0")); err != nil {
		t.Fatal(err)
	}
	gate, err := os.Open(path + eventlog.WriteGateSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	gateClosed := func() bool {
		err := syscall.Flock(int(gate.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			syscall.Flock(int(gate.Fd()), syscall.LOCK_UN)
			return false
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatal(err)
		}
		return true
	}
	if gateClosed() {
		t.Fatal("the gate is closed with no writer waiting")
	}
	conn := holdWriteLock(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, "s", 1, placed("s", "1"))
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); !gateClosed(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiting writer did not close the gate")
		}
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("append once the lock was free: %v", err)
	}
	if gateClosed() {
		t.Fatal("the gate stayed closed after the writer had the lock")
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// holdWriteLock takes SQLite's write lock of the database at path on a
// connection of its own, as another process would; ROLLBACK on the
// returned connection lets go of it.
func holdWriteLock(t *testing.T, path string) *sql.Conn {
	t.Helper()
	holder := rawDB(t, path)
	holder.SetMaxOpenConns(1)
	conn, err := holder.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return conn
}
