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
	if err := isDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// ResolveDirIn is ResolveDir for a workspace confined to the tree under
// root (resolved the same way; it must exist): spec, once its symlinks
// are resolved, must be root or a directory below it. A missing workspace
// is created through root (os.Root), so a symlink that leads out of the
// tree creates nothing outside it. An empty root confines nothing.
func ResolveDirIn(spec, root string) (string, error) {
	if root == "" {
		return ResolveDir(spec)
	}
	if spec == "" {
		return "", fmt.Errorf("%w: empty workspace directory", sandbox.ErrInvalidSpec)
	}
	rootAbs, rootDir, err := resolveRoot(root)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(spec)
	if err != nil {
		return "", fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		// Missing: made through root, from the path as written.
		rel, ok := sandbox.RelUnder(rootDir, abs)
		if !ok {
			rel, ok = sandbox.RelUnder(rootAbs, abs) // through the root's own symlinks
		}
		if !ok {
			return "", outside(abs, rootDir)
		}
		if dir, err = mkdirIn(rootDir, rel); err != nil {
			return "", fmt.Errorf("%w: workspace %s under the workspace root %s: %v", sandbox.ErrInvalidSpec, abs, rootDir, err)
		}
	}
	if _, ok := sandbox.RelUnder(rootDir, dir); !ok {
		return "", outside(dir, rootDir)
	}
	if err := isDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// isDir says why dir is not a directory, if it is not.
func isDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", sandbox.ErrInvalidSpec, dir)
	}
	return nil
}

// mkdirIn makes rel under root through an os.Root, which follows no
// symlink out of it, and returns the directory with symlinks resolved.
func mkdirIn(root, rel string) (string, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if err := r.MkdirAll(rel, 0o755); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(filepath.Join(root, rel))
}

// resolveRoot returns root made absolute, and that with its symlinks
// resolved.
func resolveRoot(root string) (abs, dir string, err error) {
	if abs, err = filepath.Abs(root); err != nil {
		return "", "", fmt.Errorf("%w: workspace root: %v", sandbox.ErrInvalidSpec, err)
	}
	if dir, err = filepath.EvalSymlinks(abs); err != nil {
		return "", "", fmt.Errorf("%w: workspace root: %v", sandbox.ErrInvalidSpec, err)
	}
	return abs, dir, nil
}

func outside(dir, root string) error {
	return fmt.Errorf("%w: workspace %s is outside the workspace root %s", sandbox.ErrInvalidSpec, dir, root)
}

// CheckUnder confirms that the directory w opened lies under root, by
// where the kernel says the opened directory is: a path swapped for a
// symlink between ResolveDirIn and Open cannot lead w out of the tree.
func (w *Workspace) CheckUnder(root string) error {
	if root == "" {
		return nil
	}
	_, rootDir, err := resolveRoot(root)
	if err != nil {
		return err
	}
	f, err := w.root.Open(".")
	if err != nil {
		return fmt.Errorf("%w: workspace: %v", sandbox.ErrInvalidSpec, err)
	}
	defer f.Close()
	at, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return fmt.Errorf("%w: where the workspace is: %v", sandbox.ErrInvalidSpec, err)
	}
	if _, ok := sandbox.RelUnder(rootDir, at); !ok {
		return outside(at, rootDir)
	}
	return nil
}
