package hostfs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"

	"github.com/gorath/rath/sandbox"
)

// Workspace is a host directory seen through an os.Root. It is safe for
// concurrent use.
type Workspace struct {
	root    *os.Root
	dir     string
	workdir string
	maxRead int64
	// escape is the os package's (unexported) "path escapes from parent"
	// error, captured from this root at Open so escapes can be recognised
	// with errors.Is rather than by matching message text.
	escape error

	// owner, when set (SetOwner), owns the files the operations create.
	// Protected by mu.
	owner *owner

	// mu serialises WriteFile and Remove, so the before and after hashes of
	// one change are not interleaved with another file-tool change. Commands
	// can still modify files concurrently; the hashes say what this call saw.
	mu sync.Mutex
}

// Open opens the directory dir, creating it if missing. workdir is the
// absolute path commands see for it: dir itself for the local backend,
// "/workspace" inside bubblewrap. maxRead caps ReadFile (<= 0 means
// sandbox.DefaultMaxReadBytes).
func Open(dir, workdir string, maxRead int64) (*Workspace, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	if maxRead <= 0 {
		maxRead = sandbox.DefaultMaxReadBytes
	}
	w := &Workspace{root: root, dir: dir, workdir: workdir, maxRead: maxRead}
	// An absolute name always escapes a Root; the error it returns carries
	// the sentinel the os package uses for every escape.
	var pe *fs.PathError
	if _, err := root.Lstat("/"); errors.As(err, &pe) {
		w.escape = pe.Err
	}
	return w, nil
}

// Dir returns the host directory.
func (w *Workspace) Dir() string { return w.dir }

// Workdir returns the absolute path commands see for the workspace.
func (w *Workspace) Workdir() string { return w.workdir }

// Close closes the root. Later calls fail.
func (w *Workspace) Close() error { return w.root.Close() }

// Resolve cleans p with sandbox.CleanPath and wraps a failure for op.
func (w *Workspace) Resolve(op, p string) (string, error) {
	rel, err := sandbox.CleanPath(w.workdir, p)
	if err != nil {
		return "", sandbox.PathErr(op, p, err)
	}
	return rel, nil
}

// mapErr turns an os error for the caller's path p into the sandbox
// vocabulary: escapes, missing files, directories.
func (w *Workspace) mapErr(op, p string, err error) error {
	switch {
	case err == nil:
		return nil
	case w.escape != nil && errors.Is(err, w.escape):
		return sandbox.PathErr(op, p, sandbox.ErrPathEscape)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// ENOTDIR here means a parent component is a file: the path does not
		// exist as asked.
		return sandbox.PathErr(op, p, sandbox.ErrNotFound)
	case errors.Is(err, syscall.EISDIR):
		return sandbox.PathErr(op, p, sandbox.ErrIsDir)
	case errors.Is(err, syscall.ENXIO):
		// Opening a FIFO for writing without a reader, non-blocking.
		return sandbox.PathErr(op, p, sandbox.ErrNotRegular)
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

// DirPath checks that p names a directory and returns its clean relative path,
// for use as a command's working directory.
func (w *Workspace) DirPath(op, p string) (string, error) {
	rel, err := w.Resolve(op, p)
	if err != nil {
		return "", err
	}
	fi, err := w.root.Stat(rel)
	if err != nil {
		return "", w.mapErr(op, p, err)
	}
	if !fi.IsDir() {
		return "", sandbox.PathErr(op, p, sandbox.ErrNotDir)
	}
	return rel, nil
}

// openRegular opens rel for reading without blocking on a FIFO and checks
// that it is a regular file.
func (w *Workspace) openRegular(op, p, rel string) (*os.File, fs.FileInfo, error) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, w.mapErr(op, p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, w.mapErr(op, p, err)
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, nil, sandbox.PathErr(op, p, sandbox.ErrIsDir)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, sandbox.PathErr(op, p, sandbox.ErrNotRegular)
	}
	return f, fi, nil
}

// ReadFile implements sandbox.Sandbox.ReadFile.
func (w *Workspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	const op = "read"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel, err := w.Resolve(op, p)
	if err != nil {
		return nil, err
	}
	f, fi, err := w.openRegular(op, p, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > w.maxRead {
		return nil, sandbox.PathErr(op, p, fmt.Errorf("%w: %d bytes, limit %d", sandbox.ErrTooLarge, fi.Size(), w.maxRead))
	}
	// Read through a limit anyway: the file may grow between Stat and Read.
	// Sizing the buffer from Stat saves ReadAll's repeated growth.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, w.maxRead+1)); err != nil {
		return nil, w.mapErr(op, p, err)
	}
	data := buf.Bytes()
	if int64(len(data)) > w.maxRead {
		return nil, sandbox.PathErr(op, p, fmt.Errorf("%w: more than %d bytes", sandbox.ErrTooLarge, w.maxRead))
	}
	return data, nil
}

// hashExisting returns the content hash of rel, or "" if it does not exist.
func (w *Workspace) hashExisting(op, p, rel string) (string, error) {
	f, _, err := w.openRegular(op, p, rel)
	if errors.Is(err, sandbox.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	h, err := sandbox.HashReader(f)
	if err != nil {
		return "", w.mapErr(op, p, err)
	}
	return h, nil
}

// WriteFile implements sandbox.Sandbox.WriteFile.
func (w *Workspace) WriteFile(ctx context.Context, p string, data []byte) (sandbox.FileChange, error) {
	const op = "write"
	if err := ctx.Err(); err != nil {
		return sandbox.FileChange{}, err
	}
	rel, err := w.Resolve(op, p)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	if rel == "." {
		return sandbox.FileChange{}, sandbox.PathErr(op, p, sandbox.ErrIsDir)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before, err := w.hashExisting(op, p, rel)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.mkdirAll(dir); err != nil {
			return sandbox.FileChange{}, w.mapErr(op, p, err)
		}
	}
	// Open without O_TRUNC and check the type first: truncating is only
	// right for a regular file, and O_NONBLOCK keeps a FIFO from hanging us.
	f, err := w.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	if !fi.Mode().IsRegular() {
		return sandbox.FileChange{}, sandbox.PathErr(op, p, sandbox.ErrNotRegular)
	}
	if err := w.chownFile(f, fi); err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	if err := f.Truncate(0); err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	if _, err := f.Write(data); err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	if err := f.Close(); err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	return sandbox.FileChange{Path: rel, Before: before, After: sandbox.Hash(data)}, nil
}

// Remove implements sandbox.Remover.
func (w *Workspace) Remove(ctx context.Context, p string) (sandbox.FileChange, error) {
	const op = "remove"
	if err := ctx.Err(); err != nil {
		return sandbox.FileChange{}, err
	}
	rel, err := w.Resolve(op, p)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := w.root.Lstat(rel)
	if err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	if fi.IsDir() {
		return sandbox.FileChange{}, sandbox.PathErr(op, p, sandbox.ErrIsDir)
	}
	var before string
	if fi.Mode().IsRegular() {
		if before, err = w.hashExisting(op, p, rel); err != nil {
			return sandbox.FileChange{}, err
		}
	}
	// A symlink is removed itself, never its target; its "before" is the
	// hash of the link text, which is what the removal destroys.
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := w.root.Readlink(rel)
		if err != nil {
			return sandbox.FileChange{}, w.mapErr(op, p, err)
		}
		before = sandbox.Hash([]byte(target))
	}
	if err := w.root.Remove(rel); err != nil {
		return sandbox.FileChange{}, w.mapErr(op, p, err)
	}
	return sandbox.FileChange{Path: rel, Before: before}, nil
}

// Stat implements sandbox.Sandbox.Stat.
func (w *Workspace) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	const op = "stat"
	if err := ctx.Err(); err != nil {
		return sandbox.FileInfo{}, err
	}
	rel, err := w.Resolve(op, p)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	fi, err := w.root.Stat(rel)
	if err != nil {
		return sandbox.FileInfo{}, w.mapErr(op, p, err)
	}
	return info(rel, fi), nil
}

// List implements sandbox.Sandbox.List.
func (w *Workspace) List(ctx context.Context, p string, recursive bool) ([]sandbox.FileInfo, error) {
	const op = "list"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel, err := w.Resolve(op, p)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(rel)
	if err != nil {
		return nil, w.mapErr(op, p, err)
	}
	if !fi.IsDir() {
		return nil, sandbox.PathErr(op, p, sandbox.ErrNotDir)
	}
	var out []sandbox.FileInfo
	// WalkDir never follows a symlink below the root, so a link to a
	// directory is listed, not descended into; the root itself was resolved
	// inside the workspace by Stat above.
	err = fs.WalkDir(w.root.FS(), rel, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if name == rel {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we walked
		}
		if err != nil {
			return err
		}
		out = append(out, info(name, fi))
		if d.IsDir() && !recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, w.mapErr(op, p, err)
	}
	slices.SortFunc(out, func(a, b sandbox.FileInfo) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// walkBatch is how many directory entries Walk reads at a time: a
// directory of a million files costs one batch of memory, not a million.
const walkBatch = 256

// Walk implements sandbox.Walker.
func (w *Workspace) Walk(ctx context.Context, p string, fn func(sandbox.FileInfo) error) error {
	const op = "walk"
	if err := ctx.Err(); err != nil {
		return err
	}
	rel, err := w.Resolve(op, p)
	if err != nil {
		return err
	}
	fi, err := w.root.Stat(rel)
	if err != nil {
		return w.mapErr(op, p, err)
	}
	if !fi.IsDir() {
		return sandbox.PathErr(op, p, sandbox.ErrNotDir)
	}
	err = w.walkDir(ctx, rel, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// walkDir reads dir in batches and calls fn for each entry, descending
// into subdirectories (never through a symlink: entries are Lstat'ed).
func (w *Workspace) walkDir(ctx context.Context, dir string, fn func(sandbox.FileInfo) error) error {
	f, err := w.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed while we walked
	}
	if err != nil {
		return w.mapErr("walk", dir, err)
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(walkBatch)
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			name := path.Join(dir, e.Name())
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return w.mapErr("walk", name, err)
			}
			switch err := fn(info(name, fi)); {
			case errors.Is(err, fs.SkipDir) && e.IsDir():
				continue
			case err != nil:
				return err
			}
			if e.IsDir() {
				if err := w.walkDir(ctx, name, fn); err != nil {
					return err
				}
			}
		}
		if err == io.EOF || (err == nil && len(entries) == 0) {
			return nil
		}
		if err != nil {
			return w.mapErr("walk", dir, err)
		}
	}
}

func info(rel string, fi fs.FileInfo) sandbox.FileInfo {
	return sandbox.FileInfo{Path: rel, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}
