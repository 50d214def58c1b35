package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
)

// countingSandbox counts the directory entries the tracker is handed,
// through List and through Walk.
type countingSandbox struct {
	sandbox.Sandbox
	seen atomic.Int64
}

func (c *countingSandbox) List(ctx context.Context, p string, recursive bool) ([]sandbox.FileInfo, error) {
	out, err := c.Sandbox.List(ctx, p, recursive)
	c.seen.Add(int64(len(out)))
	return out, err
}

func (c *countingSandbox) Walk(ctx context.Context, p string, fn func(sandbox.FileInfo) error) error {
	return c.Sandbox.(sandbox.Walker).Walk(ctx, p, func(e sandbox.FileInfo) error {
		c.seen.Add(1)
		return fn(e)
	})
}

// Past the file cap, a snapshot stops reading the workspace at the first
// file over the cap instead of listing all of it (issue: 300k files cost
// seconds and hundreds of MB per command, only to turn tracking off).
func TestTracking_StopsAtTheFileCap(t *testing.T) {
	dir := t.TempDir()
	const files, maxFiles = 2000, 10
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%20))
		os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// .git is never entered, whatever it holds.
	os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755)
	sb, err := (&local.Backend{}).Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	c := &countingSandbox{Sandbox: sb}
	snap := Tracking{MaxFiles: maxFiles, MaxFileBytes: 1 << 20, MaxBytes: 1 << 30}.take(t.Context(), c)
	if !strings.Contains(snap.off, "more than the 10 files tracked; tracking is off") {
		t.Errorf("off = %q", snap.off)
	}
	// maxFiles+1 files and the directories on the way to them.
	if n := c.seen.Load(); n > maxFiles+1+20+1 {
		t.Errorf("the snapshot read %d entries of a %d-file workspace with a cap of %d", n, files, maxFiles)
	}

	// Under the cap, every file is tracked, .git's are not.
	small := t.TempDir()
	for _, p := range []string{"a", "sub/b", ".git/HEAD", ".git/objects/x"} {
		os.MkdirAll(filepath.Join(small, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(small, p), []byte(p), 0o644)
	}
	sb2, err := (&local.Backend{}).Open(t.Context(), small)
	if err != nil {
		t.Fatal(err)
	}
	defer sb2.Close()
	snap = Tracking{MaxFiles: 2, MaxFileBytes: 1 << 20, MaxBytes: 1 << 30}.take(t.Context(), sb2)
	if snap.off != "" || len(snap.files) != 2 || snap.files["a"].hash == "" || snap.files["sub/b"].hash == "" {
		t.Errorf("snapshot under the cap: off %q, files %v", snap.off, snap.files)
	}
}
