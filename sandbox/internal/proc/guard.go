package proc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// guardShell is the shell the guard runs; it is rath's own helper, not the
// user's configured shell, and exists on every Linux system rath supports.
const guardShell = "/bin/sh"

// guard kills a command's process group when this process dies.
//
// A parent-death signal reaches only the direct child, and nothing runs in
// a process that was SIGKILLed, so the group needs a member that outlives
// us on purpose: a shell, leader of the group, blocked reading a pipe
// whose only write end this process holds (close-on-exec, so no command
// inherits it). When this process dies the kernel closes the write end,
// the read returns and the shell kills its whole group, itself included.
// On the normal path Run kills the group, guard included, and stop reaps it.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

func startGuard() (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guard pipe: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:  guardShell,
		Args:  []string{guardShell, "-c", "read x; kill -9 0"},
		Stdin: r,
		// No parent-death signal: outliving us is the guard's job.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start guard: %w", err)
	}
	return &guard{cmd: cmd, w: w}, nil
}

func (g *guard) pid() int { return g.cmd.Process.Pid }

// stop kills the guard's group (a no-op when Run already did) and reaps
// the guard.
func (g *guard) stop() {
	killGroup(g.pid())
	g.w.Close()
	_ = g.cmd.Wait()
}
