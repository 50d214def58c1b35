//go:build unix

package migrations

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockPoll is how often a process waiting for another's migration tries
// the lock again. Migrating a new store takes tens of milliseconds, and a
// poll, unlike a blocked flock, ends with ctx.
const lockPoll = 10 * time.Millisecond

// fileLock is an exclusive flock held on an open file.
type fileLock struct{ f *os.File }

// lockFile takes the exclusive flock of path, creating the file with
// the permissions of the file like (as SQLite creates its -wal and -shm
// files), and waits for it until ctx ends.
func lockFile(ctx context.Context, like, path string) (*fileLock, error) {
	perm := os.FileMode(0o600)
	if fi, err := os.Stat(like); err == nil {
		perm = fi.Mode().Perm()
	}
	// Reading is all flock needs, and all a reader of the store may do.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another process's migration: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// unlock lets go of the lock and closes the file; on nil it does nothing.
func (l *fileLock) unlock() error {
	if l == nil {
		return nil
	}
	return l.f.Close() // closing the only descriptor releases the flock
}
