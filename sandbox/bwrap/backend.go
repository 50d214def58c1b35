package bwrap

import (
	"context"
	"fmt"
	"os/exec"
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
)

// DefaultReadOnly returns the host paths bound read-only into every sandbox,
// at the same place, when they exist. A path that is a symlink on the host
// (/bin -> usr/bin on merged-/usr systems) is recreated as the same
// symlink.
func DefaultReadOnly() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}
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
	// DefaultReadOnly().
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
	// PassEnv names host variables copied into commands' environment when
	// set. Nil means DefaultPassEnv().
	PassEnv []string
	// Env is added to every command's environment.
	Env map[string]string

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
	dir, err := hostfs.ResolveDir(spec)
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
	l := launcher{bin: bin, shell: shell, dir: dir, mounts: mountArgs(ro), network: b.Network, pass: pass, env: b.Env}
	if err := b.probe(ctx, l); err != nil {
		return nil, err
	}
	ws, err := hostfs.Open(dir, Workdir, b.MaxReadBytes)
	if err != nil {
		return nil, err
	}
	return host.New(Name+":"+dir, ws, l, host.Options{Timeout: b.Timeout, MaxOutput: b.MaxOutput}), nil
}

// probe runs "true" in a sandbox once per binary, so a machine where
// bubblewrap cannot work fails at Open with bubblewrap's reason rather
// than at every command with exit status 1.
func (b *Backend) probe(ctx context.Context, l launcher) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.probed == l.bin {
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
		return fmt.Errorf("%w: %s cannot create a sandbox on this machine (exit %d): %s; bubblewrap needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or root", sandbox.ErrUnavailable, l.bin, res.ExitCode, msg)
	}
	b.probed = l.bin
	return nil
}
