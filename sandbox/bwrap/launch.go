package bwrap

import (
	"fmt"
	"os"
	"path"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/proc"
)

// launcher builds one bwrap invocation per request.
type launcher struct {
	bin     string
	shell   string
	dir     string   // host workspace
	mounts  []string // read-only system mounts, computed once at Open
	network bool
	pass    []string
	env     map[string]string
}

// mountArgs turns the read-only host paths into bwrap arguments. It looks
// at the host once, at Open: a symlink becomes --symlink with the same
// target, anything else --ro-bind, and a missing path is left out.
func mountArgs(paths []string) []string {
	var args []string
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", target, p)
			continue
		}
		args = append(args, "--ro-bind", p, p)
	}
	return args
}

// args returns the complete bwrap command line for running command with
// working directory rel (relative to the workspace).
func (l launcher) args(command, rel string) []string {
	args := []string{
		l.bin,
		"--die-with-parent",
		// A new session keeps the command from injecting input into the
		// terminal rath runs in (TIOCSTI).
		"--new-session",
		"--unshare-all",
	}
	if l.network {
		args = append(args, "--share-net")
	}
	// Fd 3 is the reaper's pipe: bwrap writes the sandbox init's pid there.
	args = append(args, "--info-fd", "3")
	args = append(args, "--hostname", "rath-sandbox", "--cap-drop", "ALL",
		"--proc", "/proc",
		"--dev", "/dev",
		// /tmp first, so read-only paths under the host's /tmp can still
		// be bound over it.
		"--tmpfs", "/tmp",
	)
	args = append(args, l.mounts...)
	args = append(args,
		"--bind", l.dir, Workdir,
		// The root is a tmpfs bwrap builds the mounts on; making it
		// read-only leaves /workspace and /tmp as the only writable
		// places.
		"--remount-ro", "/",
		"--chdir", path.Join(Workdir, rel),
		"--",
		l.shell, "-c", command,
	)
	return args
}

func (l launcher) Command(req sandbox.ExecRequest, rel string) (proc.Command, error) {
	cwd := path.Join(Workdir, rel)
	base := map[string]string{
		"PATH":   proc.DefaultPath,
		"HOME":   Workdir,
		"PWD":    cwd,
		"TMPDIR": "/tmp",
		"LANG":   "C.UTF-8",
	}
	args := l.args(req.Command, rel)
	rp, err := newReaper()
	if err != nil {
		return proc.Command{}, fmt.Errorf("bwrap info pipe: %w", err)
	}
	return proc.Command{
		Path: l.bin,
		Args: args,
		// bwrap itself starts in the workspace; --chdir sets the
		// command's directory inside.
		Dir:       l.dir,
		Env:       proc.Env(base, l.pass, l.env, req.Env),
		Stdin:     req.Stdin,
		Timeout:   req.Timeout,
		MaxStdout: req.MaxStdout,
		MaxStderr: req.MaxStderr,
		// The write end becomes fd 3 in bwrap; proc.Run closes our copy.
		ExtraFiles: []*os.File{rp.w},
		Finish:     rp.Finish,
	}, nil
}
