package replay

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Both ways of copying keep a sparse file's holes and its data.
func TestCopySparse_KeepsHoles(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	src, err := os.Create(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, at := range []int64{0, size / 2, size - 5} {
		if _, err := src.WriteAt([]byte("data!"), at); err != nil {
			t.Fatal(err)
		}
	}
	for name, copyFn := range map[string]func(dst, src *os.File, size int64) error{
		"seek data": copySparse,
		"skip zeros": func(dst, src *os.File, size int64) error {
			return copySkippingZeros(dst, src, 0, size)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dst, err := os.Create(filepath.Join(t.TempDir(), "dst"))
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if err := copyFn(dst, src, size); err != nil {
				t.Fatal(err)
			}
			st, err := dst.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != size {
				t.Fatalf("size %d, want %d", st.Size(), size)
			}
			if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 1<<20 {
				t.Fatalf("the copy uses %d bytes of disk for %d bytes of data", blocks, 15)
			}
			for _, at := range []int64{0, size / 2, size - 5} {
				b := make([]byte, 5)
				if _, err := dst.ReadAt(b, at); err != nil || string(b) != "data!" {
					t.Fatalf("at %d: %q %v", at, b, err)
				}
			}
		})
	}
}

// A hard link in the workspace to a file outside it (a tool under the
// local backend can make one) is copied as data: a live-tools replay
// that writes through the copy cannot change the file outside, and a
// symlink out is recreated as a link, not followed.
func TestCopyTree_HardLinkOutsideIsCopiedNotShared(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside.txt")
	if err := os.WriteFile(outside, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	if err := os.Link(outside, filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(ws, "sym.txt"))
	dst := filepath.Join(base, "copy")
	os.Mkdir(dst, 0o755)
	if err := copyTree(t.Context(), ws, dst); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "link.txt"), []byte("changed by the replay"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "original" {
		t.Fatalf("the file outside the workspace changed: %q", b)
	}
	var a, b syscall.Stat_t
	syscall.Stat(outside, &a)
	syscall.Stat(filepath.Join(dst, "link.txt"), &b)
	if a.Ino == b.Ino {
		t.Fatal("the copy shares the outside file's inode")
	}
	if target, err := os.Readlink(filepath.Join(dst, "sym.txt")); err != nil || target != outside {
		t.Fatalf("symlink: %q %v", target, err)
	}
}
