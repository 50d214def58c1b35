package bwrap

import (
	"encoding/json"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// reapTimeout bounds the wait for a sandbox's pid namespace to empty after
// its init was killed. The kernel kills every process in the namespace
// before the init exits, so this only runs long on a machine under heavy
// load.
const reapTimeout = 10 * time.Second

// reaper makes sure a sandbox's processes are gone when Exec returns.
//
// Killing the outer bwrap process (our child) is not enough on its own:
// the sandbox's init, inside the new pid namespace and session, only dies
// when the kernel delivers --die-with-parent's signal, and the rest of the
// namespace dies after it. Measured here, a fork tree kept writing for
// about 20 ms after the outer bwrap was reaped. So bwrap reports the
// init's pid on --info-fd, the reaper holds a pidfd on it (a pidfd cannot
// be fooled by pid reuse), and Finish kills the init and waits for it to
// exit: the kernel reaps the whole namespace before the init's own exit is
// reported.
type reaper struct {
	r, w  *os.File
	ready chan struct{} // closed once pidfd is set (or known to be absent)
	pidfd int
}

func newReaper() (*reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	rp := &reaper{r: r, w: w, ready: make(chan struct{}), pidfd: -1}
	go rp.watch()
	return rp, nil
}

// watch reads bwrap's info JSON as soon as it is written and opens a
// pidfd on the sandbox's init while it is certainly alive.
func (rp *reaper) watch() {
	defer close(rp.ready)
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(rp.r).Decode(&info); err != nil || info.ChildPid <= 0 {
		return // bwrap failed before creating the sandbox
	}
	if fd, err := unix.PidfdOpen(info.ChildPid, 0); err == nil {
		rp.pidfd = fd
	}
}

// Finish kills the sandbox's init and waits until it, and with it the
// whole pid namespace, is gone. It never fails (the error is for
// proc.Command.Finish).
func (rp *reaper) Finish() error {
	// The outer bwrap has exited, so the info pipe has no writer left and
	// watch returns even if bwrap never wrote anything.
	rp.w.Close()
	<-rp.ready
	rp.r.Close()
	if rp.pidfd < 0 {
		return nil
	}
	defer unix.Close(rp.pidfd)
	_ = unix.PidfdSendSignal(rp.pidfd, unix.SIGKILL, nil, 0)
	deadline := time.Now().Add(reapTimeout)
	fds := []unix.PollFd{{Fd: int32(rp.pidfd), Events: unix.POLLIN}}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n > 0 {
			return nil
		}
	}
}
