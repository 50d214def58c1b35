package bwrap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/sandbox"
)

func TestMountArgs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "usr")
	link := filepath.Join(root, "bin")
	os.Mkdir(dir, 0o755)
	os.Symlink("usr/bin", link)
	secret := filepath.Join(dir, "shadow")
	os.WriteFile(secret, nil, 0o600)
	masked := []string{secret, filepath.Join(dir, "missing"), "/etc/elsewhere"}
	got := mountArgs([]string{dir, link, filepath.Join(root, "missing")}, masked)
	var want []string
	for _, a := range ancestors(dir) {
		if a != "/tmp" {
			want = append(want, "--perms", "0755", "--dir", a)
		}
	}
	want = append(want, "--ro-bind", dir, dir, "--symlink", "usr/bin", link, "--ro-bind", "/dev/null", secret)
	if !slices.Equal(got, want) {
		t.Errorf("mountArgs = %q, want %q", got, want)
	}
}

func TestLauncher_Command(t *testing.T) {
	l := launcher{bin: "/usr/bin/bwrap", shell: "/bin/sh", dir: t.TempDir(), mounts: []string{"--ro-bind", "/usr", "/usr"},
		limits: limits{tmpSize: 1 << 20, shmSize: 2 << 20, procs: 7, memory: 1 << 30}, prlimit: "/usr/bin/prlimit"}
	cmd, err := l.Command(sandbox.ExecRequest{Command: "echo hi", Timeout: 1, Env: map[string]string{"K": "v"}}, "sub/dir")
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Finish() // releases the info pipe
	line := strings.Join(cmd.Args, " ")
	for _, want := range []string{
		"--die-with-parent", "--new-session", "--unshare-all", "--cap-drop ALL", "--info-fd 3",
		"--ro-bind /usr /usr", "--proc /proc", "--dev /dev", "--size 1048576 --tmpfs /tmp",
		"--size 2097152 --tmpfs /dev/shm", "--disable-userns",
		"--bind " + l.dir + " /workspace", "--unshare-user", "--remount-ro /", "--chdir /workspace/sub/dir",
		"-- /usr/bin/prlimit --nproc=7 --as=1073741824 -- /bin/sh -c echo hi",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("args lack %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "--share-net") {
		t.Errorf("network shared by default:\n%s", line)
	}
	if len(cmd.ExtraFiles) != 1 {
		t.Errorf("ExtraFiles = %v, want the info pipe", cmd.ExtraFiles)
	}
	if strings.Contains(line, "setpriv") {
		t.Errorf("setpriv without runAs:\n%s", line)
	}
	if !strings.HasSuffix(line, "-c echo hi") {
		t.Errorf("the command is not last:\n%s", line)
	}
	for _, want := range []string{"HOME=/workspace", "PWD=/workspace/sub/dir", "K=v"} {
		if !slices.Contains(cmd.Env, want) {
			t.Errorf("env lacks %s: %q", want, cmd.Env)
		}
	}
	l.network = true
	cmd, _ = l.Command(sandbox.ExecRequest{Command: "true"}, ".")
	defer cmd.Finish()
	if !slices.Contains(cmd.Args, "--share-net") {
		t.Errorf("Network: no --share-net in %q", cmd.Args)
	}
}

// As root, bwrap gets no user namespace (it would map root to root) and
// the command starts through setpriv as the unprivileged user.
func TestLauncher_CommandAsRoot(t *testing.T) {
	l := launcher{bin: "/usr/bin/bwrap", shell: "/bin/sh", dir: t.TempDir(), runAs: &owner{uid: 1234, gid: 5678},
		setpriv: "/usr/bin/setpriv", env1: "/usr/bin/env", prlimit: "/usr/bin/prlimit", limits: limits{procs: 9}}
	cmd, err := l.Command(sandbox.ExecRequest{Command: "id"}, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Finish()
	line := strings.Join(cmd.Args, " ")
	want := "-- /usr/bin/setpriv --reuid 1234 --regid 5678 --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- /usr/bin/env -C /workspace -- /usr/bin/prlimit --nproc=9 -- /bin/sh -c id"
	if !strings.HasSuffix(line, want) {
		t.Errorf("args do not end with %q:\n%s", want, line)
	}
	for _, bad := range []string{"--unshare-all", "--unshare-user", "--share-net"} {
		if strings.Contains(line, bad) {
			t.Errorf("args contain %q:\n%s", bad, line)
		}
	}
	if !strings.Contains(line, "--unshare-net") {
		t.Errorf("network not unshared:\n%s", line)
	}
}
