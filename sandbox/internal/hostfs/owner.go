package hostfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// owner is the uid and gid that files in the workspace belong to.
type owner struct{ uid, gid int }

// SetOwner gives the workspace to uid and gid: every directory, symlink
// and file in it is chowned (without following symlinks), and files and
// directories the file operations create later are chowned as they are
// created. The bwrap backend calls it when rath runs as root and its
// commands do not, so they can write their workspace and nothing they
// create belongs to root.
//
// A file with more than one hard link is left alone: another of its
// names may lie outside the workspace, and chowning it would give that
// file away too.
func (w *Workspace) SetOwner(ctx context.Context, uid, gid int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owner = &owner{uid: uid, gid: gid}
	return fs.WalkDir(w.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return w.chown(name, fi)
	})
}

// chown gives rel, described by fi, to the owner, when there is one and it
// does not own rel already.
func (w *Workspace) chown(rel string, fi fs.FileInfo) error {
	if w.owner == nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) == w.owner.uid && int(st.Gid) == w.owner.gid {
		return nil
	}
	if !fi.IsDir() && st.Nlink > 1 {
		return nil
	}
	return w.root.Lchown(rel, w.owner.uid, w.owner.gid)
}

// mkdirAll creates dir and its missing parents, giving each one created
// to the owner.
func (w *Workspace) mkdirAll(dir string) error {
	if w.owner == nil {
		return w.root.MkdirAll(dir, 0o755)
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		err := w.root.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		fi, err := w.root.Lstat(p)
		if err != nil {
			return err
		}
		if err := w.chown(p, fi); err != nil {
			return err
		}
	}
	return nil
}

// chownFile gives a file the file operations opened to the owner.
func (w *Workspace) chownFile(f *os.File, fi fs.FileInfo) error {
	if w.owner == nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink > 1 || (int(st.Uid) == w.owner.uid && int(st.Gid) == w.owner.gid) {
		return nil
	}
	return f.Chown(w.owner.uid, w.owner.gid)
}
