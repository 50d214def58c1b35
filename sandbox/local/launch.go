package local

import (
	"path/filepath"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/proc"
)

// launcher runs a request as a plain host process: Shell -c Command in the
// workspace, with the allow-listed environment.
type launcher struct {
	dir   string // the workspace, absolute
	shell string
	pass  []string
	env   map[string]string
	guard *proc.SharedGuard // the backend's: one guard process for all its commands
}

func (l launcher) Command(req sandbox.ExecRequest, rel string) (proc.Command, error) {
	cwd := filepath.Join(l.dir, filepath.FromSlash(rel))
	base := map[string]string{
		"PATH": proc.DefaultPath,
		"HOME": l.dir,
		"PWD":  cwd,
		"LANG": "C.UTF-8",
	}
	return proc.Command{
		Path:      l.shell,
		Args:      []string{l.shell, "-c", req.Command},
		Dir:       cwd,
		Env:       proc.Env(base, l.pass, l.env, req.Env),
		Stdin:     req.Stdin,
		Timeout:   req.Timeout,
		MaxStdout: req.MaxStdout,
		MaxStderr: req.MaxStderr,
		// Nothing else ends a local command's background jobs when rath
		// itself is killed.
		KillWithParent: true,
		GuardInShell:   posixShell(l.shell),
		SharedGuard:    l.guard,
	}, nil
}

// posixShell reports whether shell is one whose -c script can fork the
// guard itself (proc.Command.GuardInShell): the POSIX shells Linux
// systems ship. Any other (fish, a wrapper) gets a guard program.
func posixShell(shell string) bool {
	switch filepath.Base(shell) {
	case "sh", "dash", "bash", "ksh", "mksh", "zsh", "ash":
		return true
	}
	return false
}
