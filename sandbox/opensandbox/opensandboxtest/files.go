package opensandboxtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// execd dispatches the execd routes of one sandbox after checking its
// token.
func (s *Server) execd(w http.ResponseWriter, r *http.Request, b *box) {
	if r.Header.Get("X-EXECD-ACCESS-TOKEN") != b.token {
		// The token middleware's own shape, unlike every other error.
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"})
		return
	}
	switch rest := "/" + r.PathValue("rest"); r.Method + " " + rest {
	case "GET /ping":
		b.mu.Lock()
		fail := b.pingFail > 0
		if fail {
			b.pingFail--
		}
		b.mu.Unlock()
		if fail {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	case "POST /command":
		s.command(w, r, b)
	case "DELETE /command":
		b.interrupt(r.URL.Query().Get("id"))
		w.WriteHeader(http.StatusOK)
	case "GET /files/info":
		s.fileInfo(w, r)
	case "GET /files/download":
		s.download(w, r)
	case "POST /files/upload":
		s.upload(w, r)
	case "DELETE /files":
		s.deleteFiles(w, r)
	case "GET /directories/list":
		s.listDir(w, r)
	case "POST /directories":
		s.mkdirs(w, r)
	default:
		writeError(w, http.StatusNotFound, "NOT_SUPPORTED", fmt.Sprintf("%s %s is not implemented by the fake", r.Method, rest))
	}
}

// hostPath maps a container path to the host path below Root, or fails.
func (s *Server) hostPath(p string) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	p = path.Clean(p)
	if p != s.opts.Root && !strings.HasPrefix(p, s.opts.Root+"/") {
		return "", fmt.Errorf("path %q is outside the fake's root %s", p, s.opts.Root)
	}
	return p, nil
}

// root opens Root so file access cannot leave it through symlinks; rel is
// p relative to Root.
func (s *Server) root(p string) (*os.Root, string, error) {
	hp, err := s.hostPath(p)
	if err != nil {
		return nil, "", err
	}
	rel, err := filepath.Rel(s.opts.Root, hp)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(s.opts.Root)
	if err != nil {
		return nil, "", err
	}
	return root, rel, nil
}

// fileInfo is execd's FileInfo.
type fileInfo struct {
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	CreatedAt  time.Time `json:"created_at"`
	Owner      string    `json:"owner"`
	Group      string    `json:"group"`
	Mode       int       `json:"mode"`
}

func describe(p string, fi fs.FileInfo) fileInfo {
	typ := "other"
	switch {
	case fi.Mode().IsRegular():
		typ = "file"
	case fi.IsDir():
		typ = "directory"
	case fi.Mode()&fs.ModeSymlink != 0:
		typ = "symlink"
	}
	// execd writes the permission bits as an int whose decimal digits are
	// the octal value: 0644 is 644.
	mode, _ := strconv.Atoi(strconv.FormatUint(uint64(fi.Mode().Perm()), 8))
	return fileInfo{Path: p, Type: typ, Size: fi.Size(), ModifiedAt: fi.ModTime(), CreatedAt: fi.ModTime(), Owner: "root", Group: "root", Mode: mode}
}

func (s *Server) fileInfo(w http.ResponseWriter, r *http.Request) {
	out := map[string]fileInfo{}
	for _, p := range r.URL.Query()["path"] {
		root, rel, err := s.root(p)
		if err != nil {
			writeError(w, http.StatusForbidden, "FORBIDDEN", err.Error())
			return
		}
		fi, err := root.Lstat(rel)
		root.Close()
		if err != nil {
			writeError(w, http.StatusNotFound, "FILE_NOT_FOUND", fmt.Sprintf("file not found: %s", p))
			return
		}
		out[p] = describe(p, fi)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter 'path'")
		return
	}
	root, rel, err := s.root(p)
	if err != nil {
		writeError(w, http.StatusForbidden, "FORBIDDEN", err.Error())
		return
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		writeError(w, http.StatusNotFound, "FILE_NOT_FOUND", fmt.Sprintf("file not found: %s", p))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", fmt.Sprintf("%s is not a regular file", p))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", path.Base(p)))
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	w.WriteHeader(http.StatusOK)
	io.Copy(w, f)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_FILE", err.Error())
		return
	}
	defer r.MultipartForm.RemoveAll()
	// execd reads metadata from the form's file map, so a metadata part
	// without a filename is missing.
	metas, files := r.MultipartForm.File["metadata"], r.MultipartForm.File["file"]
	switch {
	case len(metas) == 0:
		writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA", "metadata part is missing")
		return
	case len(files) == 0:
		writeError(w, http.StatusBadRequest, "INVALID_FILE_CONTENT", "file part is missing")
		return
	case len(metas) != len(files):
		writeError(w, http.StatusBadRequest, "INVALID_FILE", "metadata and file counts differ")
		return
	}
	for i := range metas {
		var meta struct {
			Path string `json:"path"`
			Mode int    `json:"mode"`
		}
		mf, err := metas[i].Open()
		if err == nil {
			err = json.NewDecoder(mf).Decode(&meta)
			mf.Close()
		}
		if err != nil || meta.Path == "" {
			writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA", fmt.Sprintf("bad metadata: %v", err))
			return
		}
		if err := s.store(meta.Path, meta.Mode, files[i]); err != nil {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// store writes one uploaded file, creating parents; mode uses execd's
// octal-digits convention (0 means 0644 here).
func (s *Server) store(p string, mode int, fh *multipart.FileHeader) error {
	root, rel, err := s.root(p)
	if err != nil {
		return err
	}
	defer root.Close()
	perm := fs.FileMode(0o644)
	if mode != 0 {
		m, err := strconv.ParseUint(strconv.Itoa(mode), 8, 32)
		if err != nil {
			return fmt.Errorf("mode %d: %w", mode, err)
		}
		perm = fs.FileMode(m) & fs.ModePerm
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	src, err := fh.Open()
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func (s *Server) deleteFiles(w http.ResponseWriter, r *http.Request) {
	for _, p := range r.URL.Query()["path"] {
		if err := s.deleteFile(p); err != nil {
			writeError(w, err.status, err.code, err.msg)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

type httpErr struct {
	status    int
	code, msg string
}

// deleteFile removes one file like execd: a missing file is fine, a
// directory is an error.
func (s *Server) deleteFile(p string) *httpErr {
	root, rel, err := s.root(p)
	if err != nil {
		return &httpErr{http.StatusForbidden, "FORBIDDEN", err.Error()}
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &httpErr{http.StatusInternalServerError, "RUNTIME_ERROR", err.Error()}
	case fi.IsDir():
		return &httpErr{http.StatusInternalServerError, "RUNTIME_ERROR", fmt.Sprintf("%s is a directory", p)}
	}
	if err := root.Remove(rel); err != nil {
		return &httpErr{http.StatusInternalServerError, "RUNTIME_ERROR", err.Error()}
	}
	return nil
}

func (s *Server) listDir(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	depth, err := strconv.Atoi(r.URL.Query().Get("depth"))
	if err != nil {
		depth = 1
	}
	root, rel, err := s.root(p)
	if err != nil {
		writeError(w, http.StatusForbidden, "FORBIDDEN", err.Error())
		return
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	switch {
	case err != nil:
		writeError(w, http.StatusNotFound, "FILE_NOT_FOUND", fmt.Sprintf("directory not found: %s", p))
		return
	case !fi.IsDir():
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("%s is not a directory", p))
		return
	}
	out := []fileInfo{}
	if depth > 0 {
		base := strings.Count(filepath.ToSlash(rel), "/")
		err = fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if name == filepath.ToSlash(rel) {
				return nil
			}
			level := strings.Count(name, "/") - base
			if rel == "." {
				level++
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, describe(path.Join(s.opts.Root, name), info))
			if d.IsDir() && level >= depth {
				return fs.SkipDir
			}
			return nil
		})
		if err != nil {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
			return
		}
	}
	slices.SortFunc(out, func(a, b fileInfo) int { return strings.Compare(a.Path, b.Path) })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) mkdirs(w http.ResponseWriter, r *http.Request) {
	var req map[string]struct {
		Mode int `json:"mode"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", err.Error())
		return
	}
	for p := range req {
		root, rel, err := s.root(p)
		if err != nil {
			writeError(w, http.StatusForbidden, "FORBIDDEN", err.Error())
			return
		}
		err = root.MkdirAll(rel, 0o755)
		root.Close()
		if err != nil {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}
