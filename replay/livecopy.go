package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// copyTree copies the workspace src into the empty directory dst without
// following any link: a link is recreated as the same link, a regular
// file's data is copied with its holes kept as holes, and a FIFO, socket
// or device is refused with a *SpecialFileError (never opened, so a FIFO
// cannot block the copy). Both sides are os.Roots: a link swapped in
// during the copy still cannot lead it outside either tree.
func copyTree(ctx context.Context, src, dst string) error {
	sr, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("replay: copy workspace %s: %w", src, err)
	}
	defer sr.Close()
	dr, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("replay: copy workspace %s: %w", src, err)
	}
	defer dr.Close()
	err = fs.WalkDir(sr.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		rel := filepath.FromSlash(p)
		switch t := d.Type(); {
		case t.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			// The owner keeps write access so the copy can be filled.
			return dr.Mkdir(rel, info.Mode().Perm()|0o700)
		case t&fs.ModeSymlink != 0:
			target, err := sr.Readlink(rel)
			if err != nil {
				return err
			}
			return dr.Symlink(target, rel)
		case t.IsRegular():
			return copyFile(sr, dr, src, rel)
		default:
			return &SpecialFileError{Workspace: src, Path: p, Mode: t}
		}
	})
	if err != nil {
		var se *SpecialFileError
		if errors.As(err, &se) {
			return err
		}
		return fmt.Errorf("replay: copy workspace %s: %w", src, err)
	}
	return nil
}

// copyFile copies one regular file. It opens without following a link and
// without blocking, and checks the opened file is still regular: the
// listing is not proof of what is there at open time.
func copyFile(sr, dr *os.Root, src, rel string) error {
	in, err := sr.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return &SpecialFileError{Workspace: src, Path: filepath.ToSlash(rel), Mode: st.Mode().Type()}
	}
	out, err := dr.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if err := copySparse(out, in, st.Size()); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// lseek whence values for data and holes (Linux, the BSDs, Solaris).
const (
	seekData = 3
	seekHole = 4
)

// copySparse copies size bytes of src into the empty dst, writing only the
// data regions so that holes stay holes: a sparse file of gigabytes costs
// what it costs in the workspace, not its apparent size.
func copySparse(dst, src *os.File, size int64) error {
	var off int64
	for off < size {
		data, err := src.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole up to the end
		}
		if err != nil {
			return copySkippingZeros(dst, src, off, size)
		}
		hole, err := src.Seek(data, seekHole)
		if err != nil {
			return copySkippingZeros(dst, src, data, size)
		}
		hole = min(hole, size)
		if hole <= data {
			break
		}
		if _, err := io.Copy(io.NewOffsetWriter(dst, data), io.NewSectionReader(src, data, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return dst.Truncate(size)
}

// copySkippingZeros is copySparse where the filesystem cannot report
// holes: blocks of zeros are skipped instead of written.
func copySkippingZeros(dst, src *os.File, off, size int64) error {
	buf := make([]byte, 64<<10)
	zero := make([]byte, len(buf))
	for off < size {
		n, err := src.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := dst.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return dst.Truncate(size)
}

// localPath turns a recorded workspace path into a path relative to the
// copy's root, refusing one that is not inside it.
func localPath(p string) (string, error) {
	rel := filepath.FromSlash(strings.TrimPrefix(p, "/workspace/"))
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("replay: recorded path %q is not inside the workspace", p)
	}
	return rel, nil
}

// realParent reports whether every directory above rel is a directory in
// root (not a link, not missing).
func realParent(root *os.Root, rel string) (bool, error) {
	dir := filepath.Dir(rel)
	if dir == "." {
		return true, nil
	}
	var prefix string
	for _, part := range strings.Split(dir, string(filepath.Separator)) {
		prefix = filepath.Join(prefix, part)
		st, err := root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !st.IsDir() {
			return false, nil
		}
	}
	return true, nil
}

// removeIn removes rel, which the run created, from the copy. A link the
// run left above it means rel is not in the copy's own tree: nothing to
// remove there.
func removeIn(root *os.Root, rel string) error {
	ok, err := realParent(root, rel)
	if err != nil || !ok {
		return err
	}
	if _, err := root.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return root.RemoveAll(rel)
}

// writeIn writes data to rel in the copy as a regular file. A link or file
// the run put where a directory was, or anything but a regular file at
// rel itself, is replaced: it is the run's doing, and the copy is to show
// the state before it.
func writeIn(root *os.Root, rel string, data []byte) error {
	var prefix string
	if dir := filepath.Dir(rel); dir != "." {
		for _, part := range strings.Split(dir, string(filepath.Separator)) {
			prefix = filepath.Join(prefix, part)
			st, err := root.Lstat(prefix)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return err
			case st.IsDir():
				continue
			default:
				if err := root.Remove(prefix); err != nil {
					return err
				}
			}
			if err := root.Mkdir(prefix, 0o755); err != nil {
				return err
			}
		}
	}
	if st, err := root.Lstat(rel); err == nil && !st.Mode().IsRegular() {
		if err := root.RemoveAll(rel); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fileKind names a special file's type for an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "a special file"
	}
}
