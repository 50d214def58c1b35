package tmpfs

import (
	"os"
	"os/exec"
	"testing"
)

// Mount mounts a tmpfs of the given size (as mount's size= option, like
// "2m") on a new temporary directory, unmounts it when the test ends, and
// returns the directory.
func Mount(tb testing.TB, size string) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("mounting a tmpfs needs root")
	}
	dir := tb.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		tb.Fatalf("mount tmpfs (running as root, so this must work): %v\n%s", err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}
