package proc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// CloseOnExec marks every descriptor of this process from 3 up
// close-on-exec, so a command started afterwards gets only its stdin,
// stdout, stderr and the files passed to it on purpose (exec.Cmd's
// ExtraFiles, which the child's dup2 makes inheritable again).
//
// Go opens its own files close-on-exec, but a descriptor the process
// inherited from its parent (a shell's "exec 7</", a CI runner's pipes)
// or one that non-Go code opened without O_CLOEXEC would otherwise be
// inherited by every command: a descriptor on "/" is a way out of any
// sandbox. Run calls this before every start; it is exported for the
// test server that runs commands the same way.
//
// A descriptor opened without O_CLOEXEC by another goroutine between this
// call and the fork can still leak; code that does so breaks the
// convention syscall.ForkLock documents.
func CloseOnExec() error {
	// close_range(2) with CLOSE_RANGE_CLOEXEC (Linux 5.11) is one call;
	// older kernels get the /proc walk.
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range: %w", err)
	}
	return closeOnExecWalk()
}

func closeOnExecWalk() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd < 3 || fd == int(d.Fd()) {
			continue
		}
		// EBADF: closed since the listing (or the listing's own fd).
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, syscall.EBADF) {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
