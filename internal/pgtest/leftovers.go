package pgtest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dirPrefix names a server's directory under the temporary directory.
const dirPrefix = "rath-pgtest-"

// ownerLock is the file in a server's directory that the process which
// made it holds locked (flock) until Stop removes the directory. The
// kernel lets the lock go when that process dies, however it dies, so a
// lock that can be taken marks a directory nobody will remove: its test
// binary was killed (SIGKILL, a timeout) or a test ended it with os.Exit.
const ownerLock = "owner.lock"

// orphanAge is how old a directory without an owner file must be before
// it counts as left over: younger, its maker may be between making the
// directory and locking the file.
const orphanAge = time.Minute

// own creates dir's owner file and locks it for this process.
func own(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ownerLock), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeLeftovers removes the server directories under parent whose
// owners are gone, stopping a server still running in one first. Each
// left-over cluster holds tens of megabytes (hundreds after a suite's
// databases), and a machine whose tests are killed now and then would
// otherwise fill its disk with them.
func removeLeftovers(parent string, now time.Time) {
	dirs, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	for _, dir := range dirs {
		removeIfLeft(dir, now)
	}
}

// removeIfLeft removes dir if its owner is gone (see removeLeftovers).
func removeIfLeft(dir string, now time.Time) {
	f, err := os.Open(filepath.Join(dir, ownerLock))
	switch {
	case err == nil:
		// Held while removing: a second sweeper finds it locked, or gone.
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return // its owner is alive
		}
	case errors.Is(err, fs.ErrNotExist):
		info, err := os.Stat(dir)
		if err != nil || now.Sub(info.ModTime()) < orphanAge {
			return
		}
	default:
		return
	}
	if stopOrphan(filepath.Join(dir, "data")) {
		os.RemoveAll(dir)
	}
}

// stopOrphan makes sure no server runs on dataDir: it stops one whose
// parent died without taking it down (the parent-death signal covers
// most of them) and waits for it to exit. It reports whether none runs.
func stopOrphan(dataDir string) bool {
	pid := postmasterPID(dataDir)
	if pid == 0 {
		return true
	}
	syscall.Kill(pid, syscall.SIGQUIT)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if postmasterPID(dataDir) == 0 {
			return true
		}
	}
	return false
}

// postmasterPID is the pid of the server running on dataDir, or 0 when
// none does: its pid file is absent, or names a process that has exited
// (a zombie included) or that is not a server of this directory (the
// pid was reused).
func postmasterPID(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	proc := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil {
		return 0
	}
	// The state follows the command's parenthesized name.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return 0
	}
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte(dataDir)) {
		return 0
	}
	return pid
}
