package hostfs

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gorath/rath/sandbox"
)

// ResolveDir turns a backend spec into an absolute, symlink-free directory
// path, creating the directory if it is missing.
func ResolveDir(spec string) (string, error) {
	if spec == "" {
		return "", fmt.Errorf("%w: empty workspace directory", sandbox.ErrInvalidSpec)
	}
	dir, err := filepath.Abs(spec)
	if err != nil {
		return "", fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return "", fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %s is not a directory", sandbox.ErrInvalidSpec, dir)
	}
	return dir, nil
}
