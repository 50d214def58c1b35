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
