package local_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
	"github.com/gorath/rath/sandbox/sandboxtest"
)

func TestBackend_Conformance(t *testing.T) {
	b := &local.Backend{}
	sandboxtest.Run(t, b, sandboxtest.Options{
		Caps: b.Capabilities(),
		Spec: func(tb testing.TB) string { return tb.TempDir() },
	})
}

// MustOpen opens a local sandbox on a fresh directory.
func MustOpen(tb testing.TB, b *local.Backend) sandbox.Sandbox {
	tb.Helper()
	sb, err := b.Open(tb.Context(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close() })
	return sb
}

func TestBackend_Open(t *testing.T) {
	b := &local.Backend{}
	t.Run("creates the directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		sb, err := b.Open(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("workspace not created: %v", err)
		}
		if got, want := sb.ID(), "local:"+dir; got != want {
			t.Errorf("ID = %q, want %q", got, want)
		}
	})
	t.Run("relative spec", func(t *testing.T) {
		t.Chdir(t.TempDir())
		sb, err := b.Open(t.Context(), "work")
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		wd, _ := os.Getwd()
		if got, want := sb.Workdir(), filepath.Join(wd, "work"); got != want {
			t.Errorf("Workdir = %q, want %q", got, want)
		}
	})
	t.Run("symlinked workspace resolves", func(t *testing.T) {
		real := filepath.Join(t.TempDir(), "real")
		link := filepath.Join(t.TempDir(), "link")
		os.Mkdir(real, 0o755)
		os.Symlink(real, link)
		sb, err := b.Open(t.Context(), link)
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if sb.Workdir() != real {
			t.Errorf("Workdir = %q, want %q", sb.Workdir(), real)
		}
	})
	bad := []struct{ name, spec string }{
		{"empty", ""},
		{"a file", writeFile(t, "file")},
	}
	for _, tt := range bad {
		t.Run("invalid "+tt.name, func(t *testing.T) {
			_, err := b.Open(t.Context(), tt.spec)
			if !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Errorf("Open(%q) = %v, want ErrInvalidSpec", tt.spec, err)
			}
		})
	}
}

func writeFile(t *testing.T, name string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBackend_Env(t *testing.T) {
	t.Setenv("RATH_LOCAL_PASSED", "passed")
	t.Setenv("RATH_LOCAL_HIDDEN", "hidden")
	b := &local.Backend{
		PassEnv: []string{"RATH_LOCAL_PASSED"},
		Env:     map[string]string{"RATH_FIXED": "fixed", "RATH_OVERRIDDEN": "backend"},
	}
	sb := MustOpen(t, b)
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{
		Command: "env | sort",
		Env:     map[string]string{"RATH_OVERRIDDEN": "request"},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := string(res.Stdout)
	for _, want := range []string{"RATH_LOCAL_PASSED=passed", "RATH_FIXED=fixed", "RATH_OVERRIDDEN=request", "HOME=" + sb.Workdir()} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	if strings.Contains(env, "hidden") {
		t.Errorf("an unlisted host variable was passed:\n%s", env)
	}
}

func TestBackend_Defaults(t *testing.T) {
	b := &local.Backend{MaxOutput: 8, MaxReadBytes: 4}
	sb := MustOpen(t, b)
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "echo 0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "01234567" || !res.StdoutTruncated || res.StdoutBytes != 11 {
		t.Errorf("MaxOutput 8: %q truncated=%v total=%d", res.Stdout, res.StdoutTruncated, res.StdoutBytes)
	}
	if _, err := sb.WriteFile(t.Context(), "five", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ReadFile(t.Context(), "five"); !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("read 5 bytes with MaxReadBytes 4: %v", err)
	}
}

func TestSandbox_BackgroundJobsEndWithTheCall(t *testing.T) {
	sandboxtest.AssertBackgroundJobsEnd(t, MustOpen(t, &local.Backend{}))
}

// The conformance suite holds with the backend confined to a workspace
// root, and a workspace outside it does not open.
func TestBackend_WorkspaceRoot(t *testing.T) {
	root := t.TempDir()
	b := &local.Backend{WorkspaceRoot: root}
	sandboxtest.Run(t, b, sandboxtest.Options{
		Caps: b.Capabilities(),
		Spec: func(tb testing.TB) string {
			dir, err := os.MkdirTemp(root, "ws")
			if err != nil {
				tb.Fatal(err)
			}
			return dir
		},
	})
	for _, spec := range []string{t.TempDir(), filepath.Join(root, "..")} {
		if sb, err := b.Open(t.Context(), spec); !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "outside the workspace root") {
			if sb != nil {
				sb.Close()
			}
			t.Errorf("open %s: %v, want outside the workspace root", spec, err)
		}
	}
}
