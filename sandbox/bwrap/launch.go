package bwrap

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/proc"
)

// infoFD is where bwrap writes the sandbox init's pid: the only
// descriptor it is given besides stdin, stdout and stderr (proc.Run marks
// everything else close-on-exec).
const infoFD = 3

// launcher builds one bwrap invocation per request.
type launcher struct {
	bin     string
	shell   string
	dir     string   // host workspace
	mounts  []string // read-only system mounts and masks, computed once at Open
	network bool
	pass    []string
	env     map[string]string
	// runAs is the unprivileged uid and gid commands run as when rath
	// is root (see args); nil when rath is not root.
	runAs  *owner
	limits limits
	// prlimit, setpriv and env1 (env(1)) are the paths of host tools,
	// visible at the same paths inside the sandbox: prlimit when a
	// process limit is set, setpriv and env1 when runAs is.
	prlimit, setpriv, env1 string
}

type owner struct{ uid, gid int }

// limits bound a sandbox's resources; a value <= 0 means no limit.
type limits struct {
	tmpSize, shmSize int64 // bytes of the /tmp and /dev/shm tmpfs
	procs            int64 // RLIMIT_NPROC
	memory           int64 // RLIMIT_AS, bytes per process
}

// prlimitArgs returns the prlimit(1) options for the process limits, nil
// when there are none. prlimit sets the soft and the hard limit, and the
// command, unprivileged, cannot raise a hard limit again.
//
// The limits are set inside the sandbox, by the command's own parent,
// because setting them from outside needs CAP_SYS_RESOURCE over the
// sandbox's process, which root in a container often lacks.
func (lim limits) prlimitArgs() []string {
	var args []string
	if lim.procs > 0 {
		args = append(args, "--nproc="+strconv.FormatInt(lim.procs, 10))
	}
	if lim.memory > 0 {
		args = append(args, "--as="+strconv.FormatInt(lim.memory, 10))
	}
	return args
}

// mountArgs turns the read-only host paths into bwrap arguments. It looks
// at the host once, at Open: a symlink becomes --symlink with the same
// target, anything else --ro-bind, and a missing path is left out. Each
// masked path that exists under a bound directory is then hidden behind
// /dev/null (a device on a nodev mount: opening it fails).
func mountArgs(paths, masked []string) []string {
	var args, bound, made []string
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
		// bwrap creates missing parents of a mount point with mode 0700,
		// which the unprivileged user of a root rath could not cross.
		for _, a := range ancestors(p) {
			if a != "/tmp" && !under(a, bound) && !slices.Contains(made, a) {
				args = append(args, "--perms", "0755", "--dir", a)
				made = append(made, a)
			}
		}
		args = append(args, "--ro-bind", p, p)
		bound = append(bound, p)
	}
	for _, m := range masked {
		if _, err := os.Lstat(m); err != nil || !under(m, bound) {
			continue
		}
		args = append(args, "--ro-bind", "/dev/null", m)
	}
	return args
}

// ancestors returns the directories above the absolute path p, outermost
// first, without "/".
func ancestors(p string) []string {
	var out []string
	for d := path.Dir(path.Clean(p)); d != "/" && d != "."; d = path.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}

// under reports whether p is one of dirs or inside one of them.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// args returns the complete bwrap command line for running command with
// working directory rel (relative to the workspace).
//
// Run by rath as a normal user, bwrap creates a user namespace in which
// the command has rath's uid and no capabilities. Run by root, bwrap
// would map root to root, and a file the command makes setuid would be a
// setuid-root file on the host; so then bwrap gets no user namespace, and
// the command is started through setpriv(1), which switches to the
// unprivileged runAs uid and gid, drops every capability (bounding set
// included) and sets no_new_privs before anything of the model's runs.
// bwrap mounts every bind nosuid either way.
func (l launcher) args(command, rel string) []string {
	args := []string{
		l.bin,
		"--die-with-parent",
		// A new session keeps the command from injecting input into the
		// terminal rath runs in (TIOCSTI).
		"--new-session",
	}
	if l.runAs == nil {
		args = append(args, "--unshare-all",
			// Explicit, so --disable-userns is accepted: the command
			// cannot build further user namespaces (and reach the kernel
			// code only they expose).
			"--unshare-user", "--disable-userns",
			"--cap-drop", "ALL")
		if l.network {
			args = append(args, "--share-net")
		}
	} else {
		// Every namespace but the user namespace (--unshare-all would
		// try one, mapping only root, and setpriv could not switch).
		args = append(args, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
		if !l.network {
			args = append(args, "--unshare-net")
		}
		// Only what setpriv needs to switch user and drop the rest.
		args = append(args, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
	}
	args = append(args,
		"--info-fd", strconv.Itoa(infoFD),
		"--hostname", "rath-sandbox",
		"--proc", "/proc",
		"--dev", "/dev",
	)
	// --dev's /dev/shm would be part of the /dev tmpfs, without a size.
	args = append(args, "--perms", "1777")
	args = append(args, sizeArgs(l.limits.shmSize)...)
	args = append(args, "--tmpfs", "/dev/shm")
	// /tmp before the read-only paths, so paths under the host's /tmp can
	// still be bound over it.
	args = append(args, "--perms", "1777")
	args = append(args, sizeArgs(l.limits.tmpSize)...)
	args = append(args, "--tmpfs", "/tmp")
	args = append(args, l.mounts...)
	args = append(args,
		"--bind", l.dir, Workdir,
		// The root is a tmpfs bwrap builds the mounts on; making it
		// read-only leaves /workspace, /tmp and /dev/shm as the only
		// writable places.
		"--remount-ro", "/",
	)
	cwd := path.Join(Workdir, rel)
	if l.runAs == nil {
		args = append(args, "--chdir", cwd, "--")
	} else {
		// bwrap's root, without CAP_DAC_OVERRIDE, may not enter a
		// workspace that is now runAs's (mode 0700, say); env(1) changes
		// directory after setpriv switched to runAs.
		uid, gid := strconv.Itoa(l.runAs.uid), strconv.Itoa(l.runAs.gid)
		args = append(args, "--", l.setpriv, "--reuid", uid, "--regid", gid, "--clear-groups",
			"--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--",
			l.env1, "-C", cwd, "--")
	}
	if lim := l.limits.prlimitArgs(); lim != nil {
		args = append(args, l.prlimit)
		args = append(args, lim...)
		args = append(args, "--")
	}
	return append(args, l.shell, "-c", command)
}

func sizeArgs(n int64) []string {
	if n <= 0 {
		return nil
	}
	return []string{"--size", strconv.FormatInt(n, 10)}
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
	rp, err := newReaper()
	if err != nil {
		return proc.Command{}, fmt.Errorf("bwrap info pipe: %w", err)
	}
	return proc.Command{
		Path: l.bin,
		Args: l.args(req.Command, rel),
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
