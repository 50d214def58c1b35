package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/sandbox"
)

// A workspace confined to a root: the root and what lies below it, once
// symlinks are resolved, and nothing else; a missing workspace is
// created inside only, never through a link that leads out.
func TestResolveDirIn(t *testing.T) {
	base := t.TempDir()
	root, elsewhere := filepath.Join(base, "root"), filepath.Join(base, "elsewhere")
	for _, d := range []string{filepath.Join(root, "ws"), elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "made"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, spec, root, want, bad string
	}{
		{"the root", root, root, root, ""},
		{"below", filepath.Join(root, "ws"), root, filepath.Join(root, "ws"), ""},
		{"created below", filepath.Join(root, "new", "deep"), root, filepath.Join(root, "new", "deep"), ""},
		{"through the root's alias", filepath.Join(base, "alias", "ws"), root, filepath.Join(root, "ws"), ""},
		{"the root given by its alias", filepath.Join(root, "ws"), filepath.Join(base, "alias"), filepath.Join(root, "ws"), ""},
		{"elsewhere", elsewhere, root, "", "outside the workspace root"},
		{"dot-dot", filepath.Join(root, "..", "elsewhere"), root, "", "outside the workspace root"},
		{"a link out", filepath.Join(root, "out"), root, "", "outside the workspace root"},
		{"created through a link out", filepath.Join(root, "out", "new"), root, "", "escapes"},
		{"a dangling link out", filepath.Join(root, "dangling"), root, "", "escapes"},
		{"a file", filepath.Join(root, "file"), root, "", "not a directory"},
		{"a missing root", filepath.Join(base, "nowhere", "ws"), filepath.Join(base, "nowhere"), "", "workspace root"},
		{"empty", "", root, "", "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := ResolveDirIn(tc.spec, tc.root)
			if tc.bad == "" {
				if err != nil || dir != tc.want {
					t.Fatalf("got %q %v, want %q", dir, err, tc.want)
				}
				return
			}
			if err == nil || !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("got %q %v, want an invalid spec saying %q", dir, err, tc.bad)
			}
		})
	}
	for _, made := range []string{"new", "made"} {
		if _, err := os.Stat(filepath.Join(elsewhere, made)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a directory was made outside the root through a link: %s (%v)", made, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing root was created (%v)", err)
	}
}

// A workspace path swapped for a link out of the root between resolving
// it and opening it is caught by where the opened directory really is.
func TestCheckUnder_CatchesASwap(t *testing.T) {
	base := t.TempDir()
	root, elsewhere := filepath.Join(base, "root"), filepath.Join(base, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := ResolveDirIn(filepath.Join(root, "ws"), mkdir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CheckUnder(root); err != nil {
		t.Fatalf("the workspace as resolved: %v", err)
	}
	w.Close()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	w, err = Open(dir, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.CheckUnder(root); !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), elsewhere) {
		t.Fatalf("the swapped workspace: %v", err)
	}
	if err := w.CheckUnder(""); err != nil {
		t.Fatalf("no root: %v", err)
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
