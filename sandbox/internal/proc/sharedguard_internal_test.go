package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The guard's list: it kills, when its input ends, exactly the groups
// held and not dropped since, whatever order the lines came in (its kill
// is replaced by one that prints what it would kill).
func TestSharedGuardScript_KillsWhatItStillHolds(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"nothing", "", ""},
		{"held", "+ 10\n+ 20\n", "-10 -20"},
		{"dropped", "+ 10\n+ 20\n- 10\n", "-20"},
		{"all dropped", "+ 10\n- 10\n", ""},
		{"unknown drop", "+ 10\n- 99\n- 1\n", "-10"},
		{"a prefix is another group", "+ 100\n+ 10\n- 10\n", "-100"},
		{"dropped then held again", "+ 10\n- 10\n+ 10\n", "-10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(guardShell, "-c", `kill() { printf '%s\n' "$4"; }; `+sharedGuardScript)
			cmd.Stdin = strings.NewReader(tc.input)
			out, err := cmd.Output()
			if got := strings.Join(strings.Fields(string(out)), " "); err != nil || got != tc.want {
				t.Fatalf("killed %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

// Closing the shared guard (as this process's death would) kills the
// groups of the commands still running, their background jobs included.
func TestSharedGuard_CloseKillsTheRunningGroups(t *testing.T) {
	g := &SharedGuard{}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Command{Path: guardShell, Args: []string{guardShell, "-c", "sleep 600 & echo $! > " + pidFile + "; sleep 600"},
			Timeout: 10 * time.Minute, KillWithParent: true, GuardInShell: true, SharedGuard: g})
		done <- err
	}()
	pid := waitPID(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the command outlived its closed guard")
	}
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the background job (pid %d) outlived the closed guard", pid)
		}
	}
	if _, err := Run(context.Background(), Command{Path: guardShell, Args: []string{guardShell, "-c", "true"}, Timeout: time.Minute,
		KillWithParent: true, GuardInShell: true, SharedGuard: g}); err == nil {
		t.Fatal("a command ran unguarded after its guard was closed")
	}
}

// A guard that died is replaced by the next command, which runs guarded.
func TestSharedGuard_ADeadGuardIsReplaced(t *testing.T) {
	g := &SharedGuard{}
	t.Cleanup(func() { g.Close() })
	run := func() {
		t.Helper()
		res, err := Run(context.Background(), Command{Path: guardShell, Args: []string{guardShell, "-c", "echo ok"}, Timeout: time.Minute,
			KillWithParent: true, GuardInShell: true, SharedGuard: g})
		if err != nil || string(res.Stdout) != "ok\n" {
			t.Fatalf("stdout %q, err %v", res.Stdout, err)
		}
	}
	run()
	first, exited := g.pid, g.exited
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	run()
	if g.pid == first || !alive(g.pid) {
		t.Fatalf("guard %d after %d died", g.pid, first)
	}
}

func waitPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// The guard gets none of this process's environment (which may hold
// API keys) and keeps no directory of ours busy.
func TestSharedGuard_HasNothingOfOurs(t *testing.T) {
	t.Setenv("RATH_TEST_SECRET", "sk-guard-0123456789")
	g := &SharedGuard{}
	t.Cleanup(func() { g.Close() })
	if _, err := Run(context.Background(), Command{Path: guardShell, Args: []string{guardShell, "-c", "true"}, Timeout: time.Minute,
		KillWithParent: true, GuardInShell: true, SharedGuard: g}); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(g.pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "sk-guard") {
		t.Fatalf("the guard's environment holds ours: %q", env)
	}
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(g.pid) + "/cwd"); err != nil || cwd != "/" {
		t.Fatalf("the guard works in %q (%v), want /", cwd, err)
	}
}
