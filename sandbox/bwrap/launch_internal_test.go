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
	got := mountArgs([]string{dir, link, filepath.Join(root, "missing")})
	want := []string{"--ro-bind", dir, dir, "--symlink", "usr/bin", link}
	if !slices.Equal(got, want) {
		t.Errorf("mountArgs = %q, want %q", got, want)
	}
}

func TestLauncher_Command(t *testing.T) {
	l := launcher{bin: "/usr/bin/bwrap", shell: "/bin/sh", dir: "/host/ws", mounts: []string{"--ro-bind", "/usr", "/usr"}}
	cmd, err := l.Command(sandbox.ExecRequest{Command: "echo hi", Timeout: 1, Env: map[string]string{"K": "v"}}, "sub/dir")
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Finish() // releases the info pipe
	line := strings.Join(cmd.Args, " ")
	for _, want := range []string{
		"--die-with-parent", "--new-session", "--unshare-all", "--cap-drop ALL", "--info-fd 3",
		"--ro-bind /usr /usr", "--proc /proc", "--dev /dev", "--tmpfs /tmp",
		"--bind /host/ws /workspace", "--remount-ro /", "--chdir /workspace/sub/dir",
		"-- /bin/sh -c echo hi",
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
