package bwrap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/host"
	"github.com/gorath/rath/sandbox/internal/hostfs"
	"github.com/gorath/rath/sandbox/internal/proc"
)

const (
	// Name is the backend's registry name.
	Name = "bwrap"
	// Workdir is where the workspace appears inside the sandbox.
	Workdir = "/workspace"
	// DefaultBinary is looked up in PATH when Backend.Binary is empty.
	DefaultBinary = "bwrap"
	// DefaultShell is the shell inside the sandbox.
	DefaultShell = "/bin/sh"
	// probeTimeout bounds the check that bubblewrap works at all.
	probeTimeout = 30 * time.Second

	// DefaultUID and DefaultGID are the host uid and gid commands run as
	// when rath runs as root: nobody and nogroup on Debian.
	DefaultUID, DefaultGID = 65534, 65534
	// DefaultTmpSize is the size of the sandbox's /tmp.
	DefaultTmpSize = 512 << 20
	// DefaultShmSize is the size of the sandbox's /dev/shm.
	DefaultShmSize = 64 << 20
	// DefaultMaxProcesses is the RLIMIT_NPROC of the sandbox's processes:
	// how many processes its user may have at once.
	DefaultMaxProcesses = 512
	// DefaultMaxMemory is the RLIMIT_AS of each of the sandbox's
	// processes: the address space one process may map.
	DefaultMaxMemory = 4 << 30
)

// DefaultReadOnly returns the host paths bound read-only into every sandbox,
// at the same place, when they exist. A path that is a symlink on the host
// (/bin -> usr/bin on merged-/usr systems) is recreated as the same
// symlink.
func DefaultReadOnly() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}
}

// DefaultMasked returns the host files hidden inside the sandbox even
// though their directory is bound: the password hashes. The sandbox user
// is unprivileged and could not read them anyway; the mask is a second
// wall.
func DefaultMasked() []string {
	return []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-"}
}

// DefaultPassEnv returns the host variables commands get when set.
func DefaultPassEnv() []string { return []string{"LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"} }

// Backend opens bubblewrap sandboxes over host workspaces. The zero value
// is ready to use; set fields before the first Open and do not change them
// after. A Backend is safe for concurrent use.
type Backend struct {
	// Binary is the bwrap executable, a path or a name looked up in PATH.
	// Empty means DefaultBinary.
	Binary string
	// Shell runs commands inside the sandbox. Empty means DefaultShell.
	Shell string
	// ReadOnly are the host paths bound read-only. Nil means
	// DefaultReadOnly(). When rath runs as root, commands read them as
	// UID, so they must be readable by others.
	ReadOnly []string
	// Network shares the host's network namespace. False (the default)
	// gives commands a network namespace with only a loopback device.
	Network bool
	// Timeout is the default per-call timeout. Zero means
	// sandbox.DefaultTimeout.
	Timeout time.Duration
	// MaxOutput is the default cap on kept stdout and on kept stderr.
	// Zero means sandbox.DefaultMaxOutput.
	MaxOutput int
	// MaxReadBytes is the largest file ReadFile returns. Zero means
	// sandbox.DefaultMaxReadBytes.
	MaxReadBytes int64
	// WorkspaceRoot, when set, confines workspaces to the tree under it:
	// Open refuses (sandbox.ErrInvalidSpec) a spec that, once its
	// symlinks are resolved, is not WorkspaceRoot or a directory below
	// it, creates a missing workspace only inside it, and checks where
	// the directory it opened really is. For a fleet worker, whose
	// submitters choose workspace paths.
	WorkspaceRoot string
	// PassEnv names host variables copied into commands' environment when
	// set. Nil means DefaultPassEnv().
	PassEnv []string
	// Env is added to every command's environment.
	Env map[string]string

	// UID and GID are the host uid and gid commands run as when rath runs
	// as root (zero means DefaultUID, DefaultGID; root cannot be chosen):
	// bwrap starts them through setpriv(1), without capabilities and with
	// no_new_privs, so nothing they create belongs to root (a setuid-root
	// file in the workspace would be a way to root on the host). As root,
	// Open hands the workspace to them: every directory, symlink and
	// singly linked file in it is chowned, and the file tools create
	// files owned by them, so commands can write there. When rath is not
	// root, commands run as rath's user in a user namespace and these are
	// ignored.
	UID, GID int
	// Masked are host paths replaced by an unreadable node inside the
	// sandbox when they lie under a ReadOnly directory. Nil means
	// DefaultMasked().
	Masked []string
	// TmpSize and ShmSize are the sizes in bytes of the sandbox's /tmp
	// and /dev/shm (both in memory). Zero means DefaultTmpSize and
	// DefaultShmSize; negative means no size limit (half of RAM).
	TmpSize, ShmSize int64
	// MaxProcesses is the RLIMIT_NPROC of the sandbox's processes. Zero
	// means DefaultMaxProcesses; negative means no limit.
	MaxProcesses int
	// MaxMemory is the RLIMIT_AS of each sandbox process, in bytes. It
	// bounds one process, not the sandbox: a cgroup around rath is the way
	// to bound the total. Zero means DefaultMaxMemory; negative means no
	// limit.
	MaxMemory int64

	mu     sync.Mutex // protects probed
	probed string     // the binary that passed the probe
}

var _ sandbox.Backend = (*Backend)(nil)

// Name returns "bwrap".
func (b *Backend) Name() string { return Name }

// Capabilities: stdin, exact output, confined symlinks, isolation; network
// only when Backend.Network is set.
func (b *Backend) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Stdin: true, ExactOutput: true, ConfinedSymlinks: true, Isolated: true, Network: b.Network}
}

// Open opens the host workspace directory spec, creating it if missing.
// The first Open on a Backend runs bubblewrap once to check that it works.
//
// Errors: ErrInvalidSpec for a spec that is not a usable directory;
// ErrUnavailable when bwrap is missing or cannot create its namespaces.
func (b *Backend) Open(ctx context.Context, spec string) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := b.Binary
	if name == "" {
		name = DefaultBinary
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap binary %q not found (install the Debian package bubblewrap: apt-get install bubblewrap): %v", sandbox.ErrUnavailable, name, err)
	}
	dir, err := hostfs.ResolveDirIn(spec, b.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	shell := b.Shell
	if shell == "" {
		shell = DefaultShell
	}
	ro := b.ReadOnly
	if ro == nil {
		ro = DefaultReadOnly()
	}
	pass := b.PassEnv
	if pass == nil {
		pass = DefaultPassEnv()
	}
	masked := b.Masked
	if masked == nil {
		masked = DefaultMasked()
	}
	l := launcher{
		bin: bin, shell: shell, dir: dir, mounts: mountArgs(ro, masked),
		network: b.Network, pass: pass, env: b.Env,
		limits: limits{
			tmpSize: orDefault(b.TmpSize, DefaultTmpSize),
			shmSize: orDefault(b.ShmSize, DefaultShmSize),
			procs:   orDefault(int64(b.MaxProcesses), DefaultMaxProcesses),
			memory:  orDefault(b.MaxMemory, DefaultMaxMemory),
		},
	}
	if l.limits.prlimitArgs() != nil {
		if l.prlimit, err = findTool("prlimit", ro, "the process limits (set MaxProcesses and MaxMemory to -1 to run without)"); err != nil {
			return nil, err
		}
	}
	ws, err := hostfs.Open(dir, Workdir, b.MaxReadBytes)
	if err != nil {
		return nil, err
	}
	if err := ws.CheckUnder(b.WorkspaceRoot); err != nil {
		ws.Close()
		return nil, err
	}
	if os.Geteuid() == 0 {
		for _, t := range []struct {
			path *string
			name string
		}{{&l.setpriv, "setpriv"}, {&l.env1, "env"}} {
			if *t.path, err = findTool(t.name, ro, "running commands as an unprivileged user when rath runs as root"); err != nil {
				ws.Close()
				return nil, err
			}
		}
		l.runAs = &owner{uid: b.UID, gid: b.GID}
		if l.runAs.uid <= 0 {
			l.runAs.uid = DefaultUID
		}
		if l.runAs.gid <= 0 {
			l.runAs.gid = DefaultGID
		}
		if err := ws.SetOwner(ctx, l.runAs.uid, l.runAs.gid); err != nil {
			ws.Close()
			return nil, fmt.Errorf("%w: hand the workspace to uid %d: %v", sandbox.ErrInvalidSpec, l.runAs.uid, err)
		}
	}
	if err := b.probe(ctx, l); err != nil {
		ws.Close()
		return nil, err
	}
	return host.New(Name+":"+dir, ws, l, host.Options{Timeout: b.Timeout, MaxOutput: b.MaxOutput}), nil
}

// findTool looks a host tool (util-linux, coreutils) up in PATH; it must lie under one of
// the read-only paths, so the sandbox sees it at the same place.
func findTool(name string, ro []string, why string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found, needed for %s: %v", sandbox.ErrUnavailable, name, why, err)
	}
	if p, err = filepath.Abs(p); err != nil || !under(p, ro) {
		return "", fmt.Errorf("%w: %s at %s is outside the read-only paths %v the sandbox sees", sandbox.ErrUnavailable, name, p, ro)
	}
	return p, nil
}

// orDefault maps zero to def and a negative value to 0 (no limit).
func orDefault(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// probe runs "true" in a sandbox once per binary, so a machine where
// bubblewrap cannot work fails at Open with bubblewrap's reason rather
// than at every command with exit status 1.
func (b *Backend) probe(ctx context.Context, l launcher) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := fmt.Sprintf("%s as %v", l.bin, l.runAs)
	if b.probed == key {
		return nil
	}
	cmd, err := l.Command(sandbox.ExecRequest{Command: "true", Timeout: probeTimeout}, ".")
	if err != nil {
		return err
	}
	res, err := proc.Run(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%w: run %s: %v", sandbox.ErrUnavailable, l.bin, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		return fmt.Errorf("%w: %s cannot create a sandbox on this machine (exit %d): %s; bubblewrap needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or root (bubblewrap 0.8 or later)", sandbox.ErrUnavailable, l.bin, res.ExitCode, msg)
	}
	b.probed = key
	return nil
}
