package proc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox/internal/proc"
)

// guarded is sh with its guard forked by the shell itself, or held by
// shared.
func guarded(command string, shared *proc.SharedGuard) proc.Command {
	c := sh(command)
	c.KillWithParent, c.GuardInShell, c.SharedGuard = true, true, shared
	c.Timeout = 30 * time.Second
	return c
}

// A shell that forks its own guard, or waits for a shared one to hold its
// group, runs the script as if it had none:
// the same exit status, stdin, `$!` and `wait` of its own jobs, and no
// file descriptor of the guard's left open for the script. (That the
// guard kills the group when rath dies: sandbox/local
// TestExec_KilledWithRath, which runs the local backend's default
// shell this way.)
func TestRun_TheShellsOwnGuardIsInvisibleToTheScript(t *testing.T) {
	tests := []struct {
		name, script, stdin, want string
		exit                      int
	}{
		{"exit status", "exit 7", "", "", 7},
		{"stdin", "cat", "hello", "hello", 0},
		{"no job yet", `echo "[$!]"`, "", "[]\n", 0},
		{"wait waits for the script's jobs only", "sleep 0.1 & wait; echo waited", "", "waited\n", 0},
		{"$! is the script's job", `sleep 0.1 & p=$!; kill -0 "$p" && echo mine; wait`, "", "mine\n", 0},
		{"the guard's fd is closed", `ls /proc/$$/fd`, "", "0\n1\n2\n", 0},
		{"an empty script", "", "", "", 0},
	}
	shared := &proc.SharedGuard{}
	t.Cleanup(func() { shared.Close() })
	for _, tt := range tests {
		for _, mode := range []struct {
			name  string
			guard *proc.SharedGuard
		}{{"forked", nil}, {"shared", shared}} {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				c := guarded(tt.script, mode.guard)
				if tt.stdin != "" {
					c.Stdin = []byte(tt.stdin)
				}
				res, err := proc.Run(t.Context(), c)
				if err != nil || res.TimedOut {
					t.Fatalf("err %v, timed out %v (a wait on the guard would time out)", err, res.TimedOut)
				}
				if res.ExitCode != tt.exit || string(res.Stdout) != tt.want {
					t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q", res.ExitCode, res.Stdout, res.Stderr, tt.exit, tt.want)
				}
			})
		}
	}
}

// Only a shell's [shell, -c, script] gets the guard in the shell; other
// argv keeps a guard process (the command is not rewritten).
func TestRun_GuardInShellNeedsAShellScript(t *testing.T) {
	c := proc.Command{Path: "/bin/echo", Args: []string{"/bin/echo", "-c", "x", "y"}, Timeout: 30 * time.Second,
		KillWithParent: true, GuardInShell: true}
	res, err := proc.Run(t.Context(), c)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "-c x y" {
		t.Fatalf("stdout %q, err %v", res.Stdout, err)
	}
}
