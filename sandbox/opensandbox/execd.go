package opensandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"time"
)

// execd is the client of one sandbox's execd daemon.
type execd struct{ service }

func (e *execd) ping(ctx context.Context) error {
	return e.do(ctx, http.MethodGet, "/ping", nil, nil, nil)
}

// commandRequest is execd's RunCommandRequest.
type commandRequest struct {
	Command string            `json:"command"`
	Cwd     string            `json:"cwd,omitempty"`
	Timeout int64             `json:"timeout,omitempty"` // milliseconds
	Envs    map[string]string `json:"envs,omitempty"`
}

// startCommand posts a foreground command and returns the open stream.
// Errors before the stream starts (400 for a bad cwd) are *APIError.
func (e *execd) startCommand(ctx context.Context, req commandRequest) (io.ReadCloser, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hreq, err := e.request(ctx, http.MethodPost, "/command", nil, bytes.NewReader(body), "application/json")
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Accept", "text/event-stream")
	resp, err := e.send(hreq)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// interrupt kills a running command's process group. execd does not tie a
// command to its HTTP request, so dropping the stream alone would leave
// the command running.
func (e *execd) interrupt(ctx context.Context, execID string) error {
	return e.do(ctx, http.MethodDelete, "/command", url.Values{"id": {execID}}, nil, nil)
}

// remoteInfo is execd's FileInfo.
type remoteInfo struct {
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, directory, symlink, other
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	Mode       int       `json:"mode"` // permission bits written as octal digits: 644
}

// fileMode converts execd's type and decimal-digits-as-octal mode.
func (r remoteInfo) fileMode() fs.FileMode {
	perm, err := strconv.ParseUint(strconv.Itoa(r.Mode), 8, 32)
	if err != nil {
		perm = 0
	}
	m := fs.FileMode(perm) & fs.ModePerm
	switch r.Type {
	case "directory":
		m |= fs.ModeDir
	case "symlink":
		m |= fs.ModeSymlink
	case "file":
	default:
		m |= fs.ModeIrregular
	}
	return m
}

// info stats one absolute path (lstat on the server). A missing path is
// an *APIError matching sandbox.ErrNotFound.
func (e *execd) info(ctx context.Context, path string) (remoteInfo, error) {
	var m map[string]remoteInfo
	if err := e.do(ctx, http.MethodGet, "/files/info", url.Values{"path": {path}}, nil, &m); err != nil {
		return remoteInfo{}, err
	}
	ri, ok := m[path]
	if !ok {
		return remoteInfo{}, fmt.Errorf("file info: the server answered without %q", path)
	}
	return ri, nil
}

// download opens a file's content.
func (e *execd) download(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := e.request(ctx, http.MethodGet, "/files/download", url.Values{"path": {path}}, nil, "")
	if err != nil {
		return nil, err
	}
	resp, err := e.send(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// upload writes data to path, creating parents, as execd's paired
// multipart form: a "metadata" part that must carry a filename (execd reads
// it from the form's file map) followed by the "file" part.
func (e *execd) upload(ctx context.Context, path string, data []byte, mode int) error {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	meta, err := json.Marshal(map[string]any{"path": path, "mode": mode})
	if err != nil {
		return err
	}
	parts := []struct {
		name, filename, contentType string
		content                     []byte
	}{
		{"metadata", "metadata", "application/json", meta},
		{"file", path, "application/octet-stream", data},
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
		h.Set("Content-Type", p.contentType)
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := pw.Write(p.content); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	req, err := e.request(ctx, http.MethodPost, "/files/upload", nil, &body, w.FormDataContentType())
	if err != nil {
		return err
	}
	resp, err := e.send(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// list returns the entries under dir down to depth levels.
func (e *execd) list(ctx context.Context, dir string, depth int) ([]remoteInfo, error) {
	var out []remoteInfo
	q := url.Values{"path": {dir}, "depth": {strconv.Itoa(depth)}}
	if err := e.do(ctx, http.MethodGet, "/directories/list", q, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// mkdirAll creates dir and its parents (mode as octal digits, 755).
func (e *execd) mkdirAll(ctx context.Context, dir string, mode int) error {
	return e.do(ctx, http.MethodPost, "/directories", nil, map[string]any{dir: map[string]int{"mode": mode}}, nil)
}

// removeFile deletes a file; execd treats a missing file as success.
func (e *execd) removeFile(ctx context.Context, path string) error {
	return e.do(ctx, http.MethodDelete, "/files", url.Values{"path": {path}}, nil, nil)
}
