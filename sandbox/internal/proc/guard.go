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
		// Nothing of ours: no variable (rath's may hold keys), and no
		// working directory kept busy.
		Env: []string{},
		Dir: "/",
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

// shellGuard makes a shell command its own guard: args (shell, -c,
// script) get a prefix that has the shell fork, before the script runs,
// a subshell that blocks reading a pipe and then kills the group, and an
// extra file, that pipe's read end. It returns both ends; the caller
// keeps the write end, which only it holds (close-on-exec), open while
// the command runs, and closes its copy of the read end: when this
// process dies the read
// returns and the subshell kills the command's group, as a guard program
// would, for the cost of two forks instead of a program's start.
//
// The guard is forked from a subshell that exits at once, so it is not
// the script's child: a `wait` in the script does not wait for it, and
// `$!` is still the script's own. It reads nothing the script reads
// (stdin is /dev/null), writes nothing to its output, and the script
// runs with the pipe's fd closed. It is in the command's process group,
// which Run kills when the command is done. If this process dies before
// the shell has forked the guard, no line of the script has run yet and
// the shell's parent-death signal ends it; if the guard cannot be forked,
// the script does not run (exit 126), as Run fails when a guard program
// cannot start.
func shellGuard(args *[]string, extra *[]*os.File) (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("guard pipe: %w", err)
	}
	fd := 3 + len(*extra)
	*extra = append(append([]*os.File(nil), (*extra)...), r)
	a := append([]string(nil), (*args)...)
	a[2] = fmt.Sprintf("( { read _ <&%[1]d; kill -9 0; } </dev/null >/dev/null 2>&1 & ) || "+
		"{ echo 'rath: cannot fork the guard of this command' >&2; exit 126; }; exec %[1]d<&-; ", fd) + a[2]
	*args = a
	return r, w, nil
}
