package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorath/rath/sandbox"
)

// DrainGrace is how long Run keeps reading output after the command's
// process group was killed. Only a process that left the group (setsid)
// can still hold the pipes open by then; after the grace period the pipes
// are closed under it so Run always returns.
const DrainGrace = 200 * time.Millisecond

// drainLimit bounds the wait, after DrainGrace, for output already in the
// pipes to be read: a process outside the group that keeps writing must
// not keep Run waiting.
const drainLimit = 5 * time.Second

// waitUnread returns when done is closed, when no pipe in rs holds unread
// bytes, or after limit.
func waitUnread(done <-chan struct{}, limit time.Duration, rs ...*os.File) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && unread(rs...) > 0 {
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// unread returns the bytes waiting in the pipes rs (FIONREAD). It uses
// SyscallConn, not Fd, which would put the files into blocking mode and
// keep Close from interrupting a Read.
func unread(rs ...*os.File) int {
	total := 0
	for _, r := range rs {
		rc, err := r.SyscallConn()
		if err != nil {
			continue
		}
		rc.Control(func(fd uintptr) {
			if n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil { // TIOCINQ is FIONREAD
				total += n
			}
		})
	}
	return total
}

// Command is one process to run.
type Command struct {
	// Path and Args are as in exec.Cmd (Args includes argv[0]).
	Path string
	Args []string
	// Dir is the host working directory.
	Dir string
	// Env is the complete environment (see Env).
	Env []string
	// Stdin is fed through a pipe; nil gives the command /dev/null.
	Stdin []byte
	// Timeout must be positive.
	Timeout time.Duration
	// MaxStdout and MaxStderr cap the kept output (<= 0: the default).
	MaxStdout, MaxStderr int
	// ExtraFiles are passed to the child as fds 3, 4, ...; Run closes the
	// parent's copies once the child has started (or failed to).
	ExtraFiles []*os.File
	// Finish, if set, is called exactly once, after the command exited and
	// its group was killed and before its output is drained: the place to
	// kill and wait for processes the group kill cannot reach (bwrap's
	// pid namespace). An error it returns is Run's error unless Run
	// already has one.
	Finish func() error
	// KillWithParent kills the command's whole process group when this
	// process dies, however it dies (SIGKILL, a crash): see guard. The
	// command itself also gets SIGKILL as its parent-death signal.
	KillWithParent bool
	// GuardInShell says Args are a POSIX shell's [shell, "-c", script]:
	// with KillWithParent, the shell forks the guard itself before the
	// script runs (see shellGuard), which saves starting a guard program
	// of its own for each command.
	GuardInShell bool
	// SharedGuard, with KillWithParent and GuardInShell, holds the
	// command's group instead of a guard the shell forks: the script
	// waits until its group is held, and costs no fork of its own.
	SharedGuard *SharedGuard
}

// Run starts c in a new process group and waits for it.
//
// On timeout it SIGKILLs the group and returns the partial result with
// TimedOut set and an error matching sandbox.ErrTimeout; when ctx ends
// first it does the same and returns ctx's cause. After the command exits
// (for any reason) the group is killed again, which ends background jobs it
// left behind. Output beyond the caps is counted and dropped, so memory
// stays bounded whatever the command prints.
func Run(ctx context.Context, c Command) (sandbox.ExecResult, error) {
	var res sandbox.ExecResult
	finish := sync.OnceValue(func() error {
		if c.Finish != nil {
			return c.Finish()
		}
		return nil
	})
	defer finish()
	extraOpen := true
	closeExtra := func() {
		if extraOpen {
			for _, f := range c.ExtraFiles {
				f.Close()
			}
			extraOpen = false
		}
	}
	defer closeExtra()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if c.Timeout <= 0 {
		return res, fmt.Errorf("proc: timeout must be positive, got %s", c.Timeout)
	}
	// The pipes are ours, not exec.Cmd's: Wait then returns when the
	// process exits instead of waiting for every holder of the pipes, and
	// we decide how long to drain.
	outR, outW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("stdout pipe: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return res, fmt.Errorf("stderr pipe: %w", err)
	}
	defer errR.Close()
	cmd := &exec.Cmd{
		Path:       c.Path,
		Args:       c.Args,
		Dir:        c.Dir,
		Env:        c.Env,
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: c.ExtraFiles,
		// SIGKILL when the thread that started it dies: the least that
		// ends a command whose rath was killed. KillWithParent's guard
		// covers the rest of the group.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	var inW *os.File
	if c.Stdin != nil {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			outW.Close()
			errW.Close()
			return res, fmt.Errorf("stdin pipe: %w", err)
		}
		defer inR.Close()
		defer inW.Close()
		cmd.Stdin = inR
	}

	// Only stdin, stdout, stderr and ExtraFiles may reach the command.
	if err := CloseOnExec(); err != nil {
		outW.Close()
		errW.Close()
		return res, err
	}
	var g *guard
	var shared *SharedGuard
	var held *os.File // written once the shared guard holds the group
	shellScript := c.GuardInShell && len(c.Args) == 3 && c.Args[1] == "-c"
	if c.KillWithParent && shellScript && c.SharedGuard != nil {
		r, w, err := sharedGuardWait(&cmd.Args, &cmd.ExtraFiles)
		if err != nil {
			outW.Close()
			errW.Close()
			return res, err
		}
		defer r.Close() // the child has its own copy
		defer w.Close()
		shared, held = c.SharedGuard, w
	} else if c.KillWithParent && shellScript {
		r, w, err := shellGuard(&cmd.Args, &cmd.ExtraFiles)
		if err != nil {
			outW.Close()
			errW.Close()
			return res, err
		}
		defer r.Close() // the child has its own copy
		// Closed when Run returns, after the group was killed: until
		// then the guard's read must block.
		defer w.Close()
	} else if c.KillWithParent {
		if g, err = startGuard(); err != nil {
			outW.Close()
			errW.Close()
			return res, err
		}
		defer g.stop()
		// The command joins the guard's group: the guard's kill reaches it.
		cmd.SysProcAttr.Pgid = g.pid()
	}

	// A parent-death signal fires when the thread that forked exits, and
	// the Go runtime ends a thread whose locked goroutine returned; a
	// thread we hold locked until the command is gone cannot be that
	// thread, so the signal (bwrap's --die-with-parent is one too) only
	// comes when rath dies.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	err = cmd.Start()
	// The child has its own copies of the write ends; ours must go or the
	// readers would never see EOF.
	outW.Close()
	errW.Close()
	closeExtra()
	if err != nil {
		return res, fmt.Errorf("start %s: %w", c.Path, err)
	}
	pgid := cmd.Process.Pid
	if g != nil {
		pgid = g.pid()
	}
	if shared != nil {
		if err := shared.hold(pgid); err != nil {
			// The script has not run a line: it waits for held.
			killGroup(pgid)
			cmd.Wait()
			return res, err
		}
		// Dropped after the group's last kill (deferred calls run after
		// the sweep below).
		defer shared.drop(pgid)
		if _, err := held.Write([]byte("\n")); err != nil {
			killGroup(pgid)
			cmd.Wait()
			return res, fmt.Errorf("proc: let the command run: %w", err)
		}
		held.Close()
	}

	stdout := sandbox.NewCappedBuffer(c.MaxStdout)
	stderr := sandbox.NewCappedBuffer(c.MaxStderr)
	var copiers sync.WaitGroup
	copiers.Go(func() { io.Copy(stdout, outR) })
	copiers.Go(func() { io.Copy(stderr, errR) })
	if inW != nil {
		// Closing inW at the end unblocks this write if nobody reads stdin.
		go func() {
			inW.Write(c.Stdin)
			inW.Close()
		}()
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(c.Timeout)
	defer timer.Stop()
	var waitErr, callErr error
	select {
	case waitErr = <-waited:
	case <-timer.C:
		res.TimedOut = true
		killGroup(pgid)
		waitErr = <-waited
		callErr = fmt.Errorf("%w after %s", sandbox.ErrTimeout, c.Timeout)
	case <-ctx.Done():
		killGroup(pgid)
		waitErr = <-waited
		callErr = context.Cause(ctx)
	}
	res.Duration = time.Since(start)
	// Sweep the group: background jobs the command started die with it.
	killGroup(pgid)
	if err := finish(); err != nil && callErr == nil {
		callErr = err
	}

	drained := make(chan struct{})
	go func() {
		copiers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(DrainGrace):
		// A process outside the group holds a pipe (or the copiers are
		// slow to run on a loaded machine). Output already in the pipes
		// is the command's: wait until it has been read, up to
		// drainLimit, then close our read ends, which makes the copiers
		// return (the fds are pollable, so Close interrupts a blocked
		// Read).
		waitUnread(drained, drainLimit, outR, errR)
		outR.Close()
		errR.Close()
		<-drained
	}

	res.Stdout, res.StdoutTruncated, res.StdoutBytes = stdout.Bytes(), stdout.Truncated(), stdout.Total()
	res.Stderr, res.StderrTruncated, res.StderrBytes = stderr.Bytes(), stderr.Truncated(), stderr.Total()
	res.ExitCode = -1
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && callErr == nil {
		callErr = fmt.Errorf("wait: %w", waitErr)
	}
	return res, callErr
}

// killGroup sends SIGKILL to every process in the group. ESRCH (the group
// is already empty) is the expected outcome of a sweep and is ignored.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
