//go:build unix

package memory

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting; false means
// another process holds it.
func tryLock(f *os.File) (bool, error) { return flock(f, syscall.LOCK_EX) }

// tryShare takes a shared flock on f without waiting.
func tryShare(f *os.File) (bool, error) { return flock(f, syscall.LOCK_SH) }

func flock(f *os.File, how int) (bool, error) {
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
