package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// lockPoll is how often lockIndexDir retries a lock another process holds.
const lockPoll = 10 * time.Millisecond

// lockIndexDir takes an exclusive lock on the file dir+".lock", next to
// the index, waiting up to timeout. OpenLocal holds it while it inspects,
// creates, opens or repairs the index: bleve's own lock exists only once
// an index does, so without this two processes opening memory for the
// first time both create it (one fails with "path already exists"), or
// one finds the other's half-made index and deletes it as damaged. The
// lock file stays; it holds nothing.
func lockIndexDir(ctx context.Context, dir string, timeout time.Duration) (unlock func(), err error) {
	path := dir + ".lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("memory: lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("memory: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		held, err := tryLock(f)
		if err == nil && held {
			return func() {
				unlockFile(f)
				f.Close()
			}, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("memory: lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: %s (waited %v for another process opening it)", ErrLocked, dir, timeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("memory: lock %s: %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}
