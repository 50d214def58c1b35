//go:build unix

package eventlog

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// WriteGateSuffix names the file, next to a SQLite store's database, whose
// kernel lock the writers of every process pass through before SQLite's
// write lock, and which a writer kept waiting closes behind it.
const WriteGateSuffix = "-writegate"

// writeGate is a kernel lock (flock) of a file beside one SQLite
// database, shared by its writers in every process (gatedbegin.go says
// how they use it).
//
// SQLite's own busy handler polls: a writer that finds the write lock
// taken sleeps, up to 100 ms at a time, and takes the lock only if it is
// free when it wakes. With several processes appending, the lock passes
// among whoever polls at the right moment, and one writer can miss it for
// seconds at a stretch (eight appending processes measured single appends
// waiting 2–6 s, and 10 s under load, which is the busy timeout). A
// blocked flock sleeps in the kernel and wakes when the lock is released.
type writeGate struct {
	db   string // the database file, whose permissions the gate's file takes
	path string
	f    *os.File // the file whose lock this store takes; nil until the first write
	held bool
}

func newWriteGate(dbPath string) *writeGate {
	return &writeGate{db: dbPath, path: dbPath + WriteGateSuffix}
}

// acquire takes the gate, waiting at most timeout for the process that
// holds it.
func (g *writeGate) acquire(timeout time.Duration) error {
	if g == nil || g.held {
		return nil
	}
	if g.f == nil {
		// Whoever may write the database may take the gate: the file is
		// created with the database's permissions (as SQLite creates its
		// -wal and -shm files), and opened for reading only, which is all
		// flock needs.
		perm := os.FileMode(0o600)
		if fi, err := os.Stat(g.db); err == nil {
			perm = fi.Mode().Perm()
		}
		f, err := os.OpenFile(g.path, os.O_RDONLY|os.O_CREATE, perm)
		if err != nil {
			return fmt.Errorf("open the write gate: %w", err)
		}
		g.f = f
	}
	fd := int(g.f.Fd())
	err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		g.held = true
		return nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("lock the write gate: %w", err)
	}
	// A blocked flock cannot be cancelled, so it waits in its own
	// goroutine; one that gives up leaves the wait to finish there, which
	// then lets go of the lock and of its file (a later acquire opens a
	// new one, as a lock belongs to an open file).
	var mu sync.Mutex
	abandoned := false
	got := make(chan error, 1)
	f := g.f
	go func() {
		err := flockRetrying(fd, unix.LOCK_EX)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if err == nil {
				unix.Flock(fd, unix.LOCK_UN)
			}
			f.Close()
			return
		}
		got <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err = <-got:
	case <-t.C:
		mu.Lock()
		select {
		case err = <-got:
		default:
			abandoned = true
			g.f = nil
			err = errGateTimeout
		}
		mu.Unlock()
	}
	if err != nil {
		if !errors.Is(err, errGateTimeout) {
			err = fmt.Errorf("lock the write gate: %w", err)
		}
		return err
	}
	g.held = true
	return nil
}

// pass waits at most timeout for the gate to be open, and goes through
// it without holding it.
func (g *writeGate) pass(timeout time.Duration) error {
	if err := g.acquire(timeout); err != nil {
		return err
	}
	g.release()
	return nil
}

// release lets the next writer in.
func (g *writeGate) release() {
	if g == nil || !g.held {
		return
	}
	g.held = false
	unix.Flock(int(g.f.Fd()), unix.LOCK_UN)
}

// close releases the gate and closes its file.
func (g *writeGate) close() {
	if g == nil || g.f == nil {
		return
	}
	g.release()
	g.f.Close()
	g.f = nil
}

// flockRetrying is flock restarted after a signal interrupts it (the Go
// runtime's preemption signal does).
func flockRetrying(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
