package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// lockPoll is how often lockIndexDir retries a lock another process holds.
const lockPoll = 10 * time.Millisecond

// LockedError is returned when another process held the index for longer
// than LockTimeout. It names that process, as it wrote itself into the
// lock file, when it could be read. It matches ErrLocked.
type LockedError struct {
	Dir string
	// Holder is the process holding the index; zero if unknown (a build
	// that did not record itself, or the lock file could not be read).
	Holder Holder
	// Waited is how long the caller waited.
	Waited time.Duration
}

// Holder identifies the process holding an index.
type Holder struct {
	PID int `json:"pid"`
	// Command is the program and its first words (like "rath serve"),
	// never its flags or free text.
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

func (e *LockedError) Error() string {
	if e.Holder.PID == 0 {
		return fmt.Sprintf("%v: %s (waited %v)", ErrLocked, e.Dir, e.Waited)
	}
	return fmt.Sprintf("%v: %s is held by pid %d (%s) since %s (waited %v)", ErrLocked, e.Dir,
		e.Holder.PID, e.Holder.Command, e.Holder.Since.Format(time.RFC3339), e.Waited)
}

// Is makes errors.Is(err, ErrLocked) match.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockIndexDir takes an exclusive lock on the file dir+".lock", next to
// the index, waiting up to timeout, and writes this process into it. A
// Local holds it for as long as its index is open, which is only while the
// index is used (see LocalOptions.IdleClose): bleve's own lock would
// otherwise keep every other process out for the life of this one. It also
// covers creation: bleve's lock exists only once an index does, so without
// this two processes opening memory for the first time both create it, or
// one finds the other's half-made index and deletes it as damaged. The
// lock file stays; only the flock matters.
func lockIndexDir(ctx context.Context, dir string, timeout time.Duration) (*os.File, error) {
	path := dir + ".lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("memory: lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("memory: lock %s: %w", path, err)
	}
	start := time.Now()
	var want *os.File // shared-locked while waiting: asks the holder to let go
	defer func() {
		if want != nil {
			unlockFile(want)
			want.Close()
		}
	}()
	for {
		held, err := tryLock(f)
		if err == nil && held {
			writeHolder(f)
			return f, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("memory: lock %s: %w", path, err)
		}
		if want == nil {
			want, _ = os.OpenFile(wantPath(dir), os.O_CREATE|os.O_RDWR, 0o644)
		}
		if want != nil {
			// The holder takes the want lock exclusively for a moment
			// when it checks it; then this fails and is retried.
			_, _ = tryShare(want)
		}
		if waited := time.Since(start); waited > timeout {
			h := readHolder(f)
			f.Close()
			return nil, &LockedError{Dir: dir, Holder: h, Waited: waited.Round(time.Millisecond)}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("memory: lock %s: %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

func wantPath(dir string) string { return dir + ".want" }

// wanted reports whether another process is waiting for the index: it
// holds a shared lock on the want file (dir + ".want") while it waits.
// want is the holder's open want file; nil (it could not be opened)
// reports nobody.
func wanted(want *os.File) bool {
	if want == nil {
		return false
	}
	free, err := tryLock(want)
	if err != nil {
		return false
	}
	if free {
		unlockFile(want)
	}
	return !free
}

// unlockIndexDir releases a lock taken by lockIndexDir. The holder is
// left in the file: the next holder overwrites it, and nobody reads it
// unless the flock is held.
func unlockIndexDir(f *os.File) {
	unlockFile(f)
	f.Close()
}

// writeHolder records this process in the lock file it holds. It is
// best effort: the lock works without it.
func writeHolder(f *os.File) {
	raw, _ := json.Marshal(Holder{PID: os.Getpid(), Command: commandName(os.Args), Since: time.Now().UTC().Truncate(time.Second)})
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(raw, '\n'), 0)
	}
}

func readHolder(f *os.File) Holder {
	var h Holder
	raw := make([]byte, 4096)
	n, _ := f.ReadAt(raw, 0)
	if err := json.Unmarshal(raw[:n], &h); err != nil {
		return Holder{}
	}
	return h
}

// commandName is the program's base name and up to two of its first
// words that are not flags ("rath memory recall"): enough to tell a
// console from a worker, without a prompt or query text or a flag's
// value.
func commandName(argv []string) string {
	if len(argv) == 0 {
		return "?"
	}
	words := []string{filepath.Base(argv[0])}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || len(words) == 3 || len(a) > 32 || strings.ContainsAny(a, " /\t\n=") {
			break
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}
