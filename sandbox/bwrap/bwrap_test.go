//go:build integration

package bwrap_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/bwrap"
	"github.com/gorath/rath/sandbox/sandboxtest"
)

// These tests need a working bubblewrap. They are behind the integration
// tag (make test sets it and installs bubblewrap); where bwrap is missing
// or cannot create namespaces they fail with Open's message, which names
// the cause. They never skip.

func TestBackend_Conformance(t *testing.T) {
	b := &bwrap.Backend{}
	sandboxtest.Run(t, b, sandboxtest.Options{
		Caps: b.Capabilities(),
		Spec: func(tb testing.TB) string { return tb.TempDir() },
	})
}

// MustOpen opens a bwrap sandbox on a fresh directory or fails the test
// with the reason bubblewrap is unusable.
func MustOpen(tb testing.TB, b *bwrap.Backend) sandbox.Sandbox {
	tb.Helper()
	sb, err := b.Open(tb.Context(), tb.TempDir())
	if err != nil {
		tb.Fatalf("bubblewrap is required for this test and does not work here: %v", err)
	}
	tb.Cleanup(func() { sb.Close() })
	return sb
}

func sh(t *testing.T, sb sandbox.Sandbox, command string) sandbox.ExecResult {
	t.Helper()
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: command})
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	return res
}

func TestBackend_NoWritesOutsideWorkspace(t *testing.T) {
	sb := MustOpen(t, &bwrap.Backend{})
	probe := filepath.Join(os.TempDir(), fmt.Sprintf("rath-bwrap-probe-%d", os.Getpid()))
	t.Cleanup(func() { os.Remove(probe) })
	tests := []struct {
		name, command string
	}{
		{"usr", "touch /usr/rath-probe"},
		{"etc", "echo x >> /etc/hostname"},
		{"root", "touch /rath-probe"},
		{"workspace parent", "touch /workspace/../rath-probe"},
	}
	for _, tt := range tests {
		res := sh(t, sb, tt.command)
		if res.ExitCode == 0 {
			t.Errorf("%s: %q succeeded", tt.name, tt.command)
		}
	}
	// /tmp is writable but private: the host's /tmp does not change.
	res := sh(t, sb, "echo private > "+probe+" && cat "+probe)
	if res.ExitCode != 0 || string(res.Stdout) != "private\n" {
		t.Fatalf("write to the sandbox /tmp: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(probe); !os.IsNotExist(err) {
		t.Errorf("the sandbox's /tmp write reached the host (%s): %v", probe, err)
	}
	// The workspace is writable and is the host directory.
	sh(t, sb, "echo shared > /workspace/shared.txt")
	if data, err := sb.ReadFile(t.Context(), "shared.txt"); err != nil || string(data) != "shared\n" {
		t.Errorf("workspace write: %q, %v", data, err)
	}
}

func TestBackend_NoHostProcesses(t *testing.T) {
	sb := MustOpen(t, &bwrap.Backend{})
	res := sh(t, sb, "ls /proc | grep '^[0-9]' | wc -l; echo $$")
	fields := strings.Fields(string(res.Stdout))
	if len(fields) != 2 {
		t.Fatalf("output %q", res.Stdout)
	}
	var n, pid int
	fmt.Sscan(fields[0], &n)
	fmt.Sscan(fields[1], &pid)
	// bwrap's init, the shell, ls, grep, wc: a handful, against the
	// host's dozens.
	if n > 10 {
		t.Errorf("%d processes visible in the sandbox; the pid namespace is not private", n)
	}
	if pid > 10 {
		t.Errorf("the shell's pid is %d; expected a small pid in a new namespace", pid)
	}
	if res := sh(t, sb, "hostname"); string(res.Stdout) != "rath-sandbox\n" {
		t.Errorf("hostname = %q: the uts namespace is not private", res.Stdout)
	}
	if res := sh(t, sb, "grep CapEff /proc/self/status"); !strings.Contains(string(res.Stdout), "0000000000000000") {
		t.Errorf("capabilities not dropped: %q", res.Stdout)
	}
}

func TestBackend_NetworkOption(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	probe := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' && echo CONNECTED", port)
	for _, network := range []bool{false, true} {
		sb := MustOpen(t, &bwrap.Backend{Network: network})
		res := sh(t, sb, probe)
		if got := strings.Contains(string(res.Stdout), "CONNECTED"); got != network {
			t.Errorf("Network=%v: connected=%v (stderr %q)", network, got, res.Stderr)
		}
	}
}

func TestBackend_ExtraReadOnly(t *testing.T) {
	extra := t.TempDir()
	// As root, commands run as an unprivileged user: the directory must
	// be readable by others, as the system directories are.
	if err := os.Chmod(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(extra, "tool.txt"), []byte("tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := MustOpen(t, &bwrap.Backend{ReadOnly: append(bwrap.DefaultReadOnly(), extra)})
	res := sh(t, sb, fmt.Sprintf("cat %[1]s/tool.txt; touch %[1]s/new", extra))
	if string(res.Stdout) != "tool\n" || res.ExitCode == 0 {
		t.Errorf("extra read-only dir: stdout %q stderr %q exit %d", res.Stdout, res.Stderr, res.ExitCode)
	}
	if _, err := os.Stat(filepath.Join(extra, "new")); !os.IsNotExist(err) {
		t.Errorf("wrote into a read-only bind: %v", err)
	}
}

func TestSandbox_BackgroundJobsEndWithTheCall(t *testing.T) {
	sandboxtest.AssertBackgroundJobsEnd(t, MustOpen(t, &bwrap.Backend{}))
}

// Confined to a workspace root, the backend opens a workspace below it
// and refuses one elsewhere before it touches it (as root it would hand
// the directory to the sandbox user).
func TestBackend_WorkspaceRoot(t *testing.T) {
	root := t.TempDir()
	b := &bwrap.Backend{WorkspaceRoot: root}
	sb, err := b.Open(t.Context(), filepath.Join(root, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "pwd"}); err != nil || strings.TrimSpace(string(res.Stdout)) != bwrap.Workdir {
		t.Fatalf("pwd: %q %v", res.Stdout, err)
	}
	elsewhere := t.TempDir()
	before, err := os.Stat(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if sb, err := b.Open(t.Context(), elsewhere); !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "outside the workspace root") {
		if sb != nil {
			sb.Close()
		}
		t.Fatalf("open %s: %v, want outside the workspace root", elsewhere, err)
	}
	if after, err := os.Stat(elsewhere); err != nil || !os.SameFile(before, after) || after.Sys().(*syscall.Stat_t).Uid != before.Sys().(*syscall.Stat_t).Uid {
		t.Fatalf("the refused directory changed: %v", err)
	}
}
