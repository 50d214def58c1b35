package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
)

// go-openai returns no response headers with an error, but a 429's
// Retry-After lives there, and it cannot tell a stream that ended with
// "data: [DONE]" from one whose connection was closed early (both come
// back as io.EOF). captureTransport sees the raw response: it stores the
// status and headers in the call's capture, and wraps a streamed body to
// notice the [DONE] line. It never looks at the request headers, so the
// key does not pass through it.

type captureKey struct{}

// capture is what one call's transport saw. One call is one request, but
// a redirect makes several round trips: the last response wins.
type capture struct {
	mu     sync.Mutex
	status int
	header http.Header
	done   bool // a "data: [DONE]" line was read
}

func withCapture(ctx context.Context) (context.Context, *capture) {
	c := &capture{}
	return context.WithValue(ctx, captureKey{}, c), c
}

func (c *capture) set(status int, h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.header = status, h
}

func (c *capture) get() (int, http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.header
}

func (c *capture) markDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
}

func (c *capture) sawDone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

type captureTransport struct {
	base http.RoundTripper // nil means http.DefaultTransport
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if c, ok := req.Context().Value(captureKey{}).(*capture); ok {
		c.set(resp.StatusCode, resp.Header.Clone())
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &doneWatcher{ReadCloser: resp.Body, c: c}
		}
	}
	return resp, nil
}

// maxWatchedLine is longer than any "data: [DONE]" line; longer lines are
// not kept, so watching costs no memory per chunk.
const maxWatchedLine = 32

// doneWatcher passes a body through and marks the capture when a whole
// line reads "data: [DONE]".
type doneWatcher struct {
	io.ReadCloser
	c    *capture
	line []byte
	long bool
}

func (w *doneWatcher) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			w.endLine()
			continue
		}
		if len(w.line) < maxWatchedLine {
			w.line = append(w.line, b)
		} else {
			w.long = true
		}
	}
	if err == io.EOF {
		w.endLine() // a last line without a newline
	}
	return n, err
}

func (w *doneWatcher) endLine() {
	if !w.long && isDoneLine(w.line) {
		w.c.markDone()
	}
	w.line, w.long = w.line[:0], false
}

func isDoneLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	return ok && string(bytes.TrimSpace(rest)) == "[DONE]"
}
