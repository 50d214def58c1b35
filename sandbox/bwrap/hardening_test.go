//go:build integration

package bwrap_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/bwrap"
)

// A command must not be able to leave a setuid-root program in the host
// workspace. Run as root (as CI runners are), bwrap used to map root to
// root, so "cp /usr/bin/id x && chmod 4755 x" did exactly that.
func TestSandbox_NoSetuidRootInWorkspace(t *testing.T) {
	dir := t.TempDir()
	sb, err := (&bwrap.Backend{}).Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	res := sh(t, sb, "id -u; cp /usr/bin/id planted && chmod 4755 planted; ./planted -u")
	t.Logf("inside: %q %q", res.Stdout, res.Stderr)
	if ids := strings.Fields(string(res.Stdout)); len(ids) > 0 && ids[0] == "0" {
		t.Errorf("commands run as uid 0")
	}
	fi, err := os.Stat(filepath.Join(dir, "planted"))
	if err != nil {
		return // the copy failed: nothing planted
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && (st.Uid == 0 || st.Gid == 0) {
		t.Errorf("planted %s owned by %d:%d: a setuid/setgid root program on the host", fi.Mode(), st.Uid, st.Gid)
	}
}

// As root, commands run as an unprivileged user, and the workspace stays
// theirs: files that were there at Open and files the file tools write
// can be changed by commands, and files commands create are theirs.
func TestSandbox_WorkspaceWritableAsUnprivilegedUser(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "old", "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old", "deep", "f.txt"), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A hard link may have another name outside the workspace: it must
	// not be handed to the sandbox's user.
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	b := &bwrap.Backend{UID: 4242, GID: 4343}
	sb, err := b.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.WriteFile(t.Context(), "new/dir/tool.txt", []byte("tool\n")); err != nil {
		t.Fatal(err)
	}
	res := sh(t, sb, "echo more >> old/deep/f.txt && echo more >> new/dir/tool.txt && mkdir made && echo x > made/x && echo ok; echo x >> link.txt")
	if string(res.Stdout) != "ok\n" {
		t.Fatalf("the command could not write its workspace: %q %q", res.Stdout, res.Stderr)
	}
	if os.Geteuid() != 0 {
		return // commands run as rath's user, who may write its own files
	}
	if data, _ := os.ReadFile(outside); string(data) != "host\n" {
		t.Errorf("the hard-linked host file was changed: %q", data)
	}
	for _, p := range []string{".", "old/deep/f.txt", "new/dir", "new/dir/tool.txt", "made/x"} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4242 || st.Gid != 4343 {
			t.Errorf("%s is owned by %d:%d, want 4242:4343", p, st.Uid, st.Gid)
		}
	}
	fi, _ := os.Stat(outside)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("the hard-linked host file was given to uid %d", st.Uid)
	}
	if out := sh(t, sb, "id -u; id -g").Stdout; string(out) != "4242\n4343\n" {
		t.Errorf("id inside = %q, want 4242 4343", out)
	}
}

// The password hashes are not readable, even though /etc is bound.
func TestSandbox_NoShadow(t *testing.T) {
	if data, err := os.ReadFile("/etc/shadow"); err != nil || len(data) == 0 {
		t.Logf("the host's /etc/shadow is not readable here (%v): the test shows less", err)
	}
	sb := MustOpen(t, &bwrap.Backend{})
	res := sh(t, sb, "cat /etc/shadow /etc/gshadow")
	if res.ExitCode == 0 || len(res.Stdout) > 0 {
		t.Errorf("read the shadow files: exit %d, %q", res.ExitCode, res.Stdout)
	}
	if res := sh(t, sb, "test -r /etc/passwd && echo ok"); string(res.Stdout) != "ok\n" {
		t.Errorf("/etc/passwd is not readable: %q", res.Stderr)
	}
}

// /tmp and /dev/shm are in memory and have sizes; writing past them fails
// instead of filling the host's RAM.
func TestSandbox_TmpfsSizes(t *testing.T) {
	sb := MustOpen(t, &bwrap.Backend{TmpSize: 1 << 20, ShmSize: 2 << 20})
	for _, tt := range []struct {
		dir  string
		size int64
	}{{"/tmp", 1 << 20}, {"/dev/shm", 2 << 20}} {
		// 4 MiB into a 1 or 2 MiB filesystem.
		res := sh(t, sb, "head -c 4194304 /dev/zero > "+tt.dir+"/fill; echo $?; wc -c < "+tt.dir+"/fill")
		lines := strings.Fields(string(res.Stdout))
		if len(lines) != 2 || lines[0] == "0" {
			t.Errorf("%s: writing 4 MiB succeeded: %q %q", tt.dir, res.Stdout, res.Stderr)
			continue
		}
		if n, _ := strconv.ParseInt(lines[1], 10, 64); n > tt.size {
			t.Errorf("%s holds %d bytes, more than its %d", tt.dir, n, tt.size)
		}
	}
	// The defaults are limits too.
	sb = MustOpen(t, &bwrap.Backend{})
	res := sh(t, sb, "df -k /tmp /dev/shm | tail -n 2")
	for _, tt := range []struct {
		dir  string
		size int64
	}{{"/tmp", bwrap.DefaultTmpSize}, {"/dev/shm", bwrap.DefaultShmSize}} {
		found := false
		for line := range strings.Lines(string(res.Stdout)) {
			f := strings.Fields(line)
			if len(f) == 6 && f[5] == tt.dir {
				found = true
				if kb, _ := strconv.ParseInt(f[1], 10, 64); kb*1024 != tt.size {
					t.Errorf("%s has %d KiB, want %d", tt.dir, kb, tt.size/1024)
				}
			}
		}
		if !found {
			t.Errorf("df does not show %s: %q", tt.dir, res.Stdout)
		}
	}
}

// The process and memory limits hold, and a command cannot raise them.
func TestSandbox_ProcessLimits(t *testing.T) {
	sb := MustOpen(t, &bwrap.Backend{MaxProcesses: 20, MaxMemory: 96 << 20})
	res := sh(t, sb, "grep -E '^Max (processes|address space)' /proc/self/limits")
	for _, want := range []string{"20                   20", "100663296            100663296"} {
		if !strings.Contains(string(res.Stdout), want) {
			t.Errorf("limits lack %q:\n%s", want, res.Stdout)
		}
	}
	// 40 background sleeps: at most 20 processes may exist at once. The
	// subshell dies at the first failed fork; the count uses only
	// builtins, as no fork is left for anything else.
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: `(for i in $(seq 40); do sleep 5 & done) 2>/dev/null; n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n`})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(res.Stdout))); n == 0 || n > 21 {
		t.Errorf("%d processes in the sandbox, limit 20 (plus bwrap's init): %q %q", n, res.Stdout, res.Stderr)
	}
	// One process cannot hold 150 MB: tail keeps the last 150 MB of its
	// input in memory.
	res = sh(t, sb, `head -c 150000000 /dev/zero | tail -c 150000000 | wc -c`)
	if strings.TrimSpace(string(res.Stdout)) == "150000000" {
		t.Errorf("tail held 150 MB under a 96 MiB address-space limit")
	}
	// Raising a hard limit fails.
	if res := sh(t, sb, "ulimit -u 100 && echo raised"); strings.Contains(string(res.Stdout), "raised") {
		t.Errorf("the command raised its process limit")
	}
}
