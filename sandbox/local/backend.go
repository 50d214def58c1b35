package local

import (
	"context"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/host"
	"github.com/gorath/rath/sandbox/internal/hostfs"
	"github.com/gorath/rath/sandbox/internal/proc"
)

// Name is the backend's registry name.
const Name = "local"

// DefaultShell runs every command as Shell -c Command.
const DefaultShell = "/bin/sh"

// DefaultPassEnv returns the host variables commands get when set: locale,
// terminal and user name settings, never credentials.
func DefaultPassEnv() []string {
	return []string{"LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME", "TMPDIR"}
}

// Backend opens local workspaces. The zero value is ready to use; set
// fields before the first Open and do not change them after. A Backend is
// safe for concurrent use.
type Backend struct {
	// Shell runs commands as Shell -c Command. Empty means DefaultShell.
	Shell string
	// Timeout is the default per-call timeout. Zero means
	// sandbox.DefaultTimeout.
	Timeout time.Duration
	// MaxOutput is the default cap on kept stdout and on kept stderr, in
	// bytes. Zero means sandbox.DefaultMaxOutput.
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
	// PassEnv names host variables copied into every command's
	// environment when set. Nil means DefaultPassEnv(); an empty non-nil
	// slice passes none.
	PassEnv []string
	// Env is added to every command's environment (after PassEnv; a
	// request's Env wins over both).
	Env map[string]string

	// guard kills the process groups of the commands still running when
	// this process dies: one guard process for every command of the
	// backend's sandboxes, started with the first.
	guard proc.SharedGuard
}

var _ sandbox.Backend = (*Backend)(nil)

// Name returns "local".
func (b *Backend) Name() string { return Name }

// Capabilities: stdin, exact output and confined symlinks; commands are
// not isolated and have the host's network.
func (b *Backend) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Stdin: true, ExactOutput: true, ConfinedSymlinks: true, Network: true}
}

// Open opens the workspace directory spec, creating it if missing. A
// relative spec is resolved against the process's working directory; the
// sandbox's Workdir is the absolute path with symlinks resolved, which is
// what commands see from pwd.
//
// Errors: ErrInvalidSpec for an empty spec or one that is not a directory.
func (b *Backend) Open(ctx context.Context, spec string) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := hostfs.ResolveDirIn(spec, b.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	ws, err := hostfs.Open(dir, dir, b.MaxReadBytes)
	if err != nil {
		return nil, err
	}
	if err := ws.CheckUnder(b.WorkspaceRoot); err != nil {
		ws.Close()
		return nil, err
	}
	shell := b.Shell
	if shell == "" {
		shell = DefaultShell
	}
	pass := b.PassEnv
	if pass == nil {
		pass = DefaultPassEnv()
	}
	l := launcher{dir: dir, shell: shell, pass: pass, env: b.Env, guard: &b.guard}
	return host.New(Name+":"+dir, ws, l, host.Options{Timeout: b.Timeout, MaxOutput: b.MaxOutput}), nil
}
