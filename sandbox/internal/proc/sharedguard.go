package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// sharedGuardScript is the shared guard: it keeps the process groups it
// is told of ("+ PGID" adds one, "- PGID" drops it) until its stdin ends,
// which happens when the process holding the pipe's write end closes it
// or dies, and then kills every group it still holds. It forks nothing
// while it keeps the list: the pattern expansions are the shell's own.
const sharedGuardScript = `pgs=' '
while read -r op pg; do
	case $op in
	+) pgs="$pgs$pg " ;;
	-) case $pgs in *" $pg "*) pgs="${pgs%%" $pg "*} ${pgs#*" $pg "}" ;; esac ;;
	esac
done
for pg in $pgs; do kill -s KILL -- "-$pg" 2>/dev/null; done`

// guardWriteLimit bounds a write to the shared guard: a guard that stopped
// reading (SIGSTOPped, its pipe full) fails the command rather than
// blocking it.
const guardWriteLimit = 2 * time.Second

// SharedGuard is one guard process for the commands of many Runs: what
// the per-command guard (guard, shellGuard) does for one group, it does
// for every group it holds, and a command costs two short writes to it
// instead of the two forks of a guard of its own.
//
// Run holds a command's group with it before the command's first line
// runs (the shell waits on a pipe until then) and drops it once the
// group was killed. When this process dies, however it dies, the
// kernel closes the guard's stdin and the guard kills every group it
// still holds. Close does the same on purpose; a SharedGuard that
// becomes unreachable closes its pipe when the garbage collector finds
// the file, and the guard exits.
//
// The zero value is ready to use: the guard starts with the first
// command. A SharedGuard is safe for concurrent use.
type SharedGuard struct {
	mu     sync.Mutex
	w      *os.File      // the guard's stdin; only this process holds it
	pid    int           // the running guard's
	exited chan struct{} // closed when the running guard was reaped
	closed bool
}

// start starts a guard. g.mu is held.
func (g *SharedGuard) start() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("shared guard pipe: %w", err)
	}
	defer r.Close()
	// The guard must not hold what commands must not inherit either.
	if err := CloseOnExec(); err != nil {
		w.Close()
		return err
	}
	cmd := &exec.Cmd{
		Path:  guardShell,
		Args:  []string{guardShell, "-c", sharedGuardScript},
		Stdin: r,
		// Nothing of ours: no variable (rath's may hold keys), and no
		// working directory kept busy.
		Env: []string{},
		Dir: "/",
		// Its own group, out of reach of a terminal's ^C to ours and of
		// the groups it kills; no parent-death signal: outliving this
		// process is its job.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start the shared guard: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	g.w, g.pid, g.exited = w, cmd.Process.Pid, exited
	return nil
}

// hold tells the guard to kill group pgid if this process dies. A guard
// that died (its pipe broken) is started again. One that stopped reading
// is not replaced: it still holds groups, and would kill them whenever it
// read on and met the end of its closed pipe.
func (g *SharedGuard) hold(pgid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("proc: the shared guard is closed")
	}
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if g.w == nil {
			if err = g.start(); err != nil {
				return err
			}
		}
		if err = g.send('+', pgid); err == nil || !errors.Is(err, syscall.EPIPE) {
			break
		}
		g.w.Close()
		g.w = nil
	}
	if err != nil {
		return fmt.Errorf("proc: guard the command's group (guard pid %d): %w", g.pid, err)
	}
	return nil
}

// drop tells the guard that group pgid is gone. A failure is harmless: a
// guard that is gone holds nothing, and the group was killed already.
func (g *SharedGuard) drop(pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		_ = g.send('-', pgid)
	}
}

func (g *SharedGuard) send(op byte, pgid int) error {
	if err := g.w.SetWriteDeadline(time.Now().Add(guardWriteLimit)); err != nil {
		return err
	}
	_, err := fmt.Fprintf(g.w, "%c %d\n", op, pgid)
	return err
}

// Close ends the guard, which kills the groups it still holds, and waits
// for it to exit. Later commands that use g fail.
func (g *SharedGuard) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.w == nil {
		return nil
	}
	err := g.w.Close()
	g.w = nil
	select {
	case <-g.exited:
	case <-time.After(guardWriteLimit): // stopped: it acts when continued
	}
	return err
}

// sharedGuardWait rewrites a shell's args (shell, -c, script) so that the
// script waits, reading an extra file, until its group is held by a
// SharedGuard. It returns both ends of that pipe: the caller writes a line
// to w once the group is held, and closes its copy of r. If this process
// dies first, the read meets the end of the pipe and the script exits
// (125) without running a line, besides the shell's parent-death signal.
func sharedGuardWait(args *[]string, extra *[]*os.File) (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("guard pipe: %w", err)
	}
	fd := 3 + len(*extra)
	*extra = append(append([]*os.File(nil), (*extra)...), r)
	a := append([]string(nil), (*args)...)
	a[2] = fmt.Sprintf("read -r _ <&%[1]d || exit 125; exec %[1]d<&-; ", fd) + a[2]
	*args = a
	return r, w, nil
}
