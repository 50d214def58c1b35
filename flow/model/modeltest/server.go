package modeltest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is a fake model API. It is safe for concurrent use: requests are
// answered in arrival order from one queue.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	flavor  flavor
	baseURL string

	mu    sync.Mutex // protects queue, reqs and seq
	queue []Reply
	reqs  []Request
	seq   int
}

// flavor is what differs between the OpenAI and the Anthropic fake.
type flavor struct {
	name string
	path string // the one endpoint served
	// errorBody renders the provider's error object.
	errorBody func(status int, msg string) []byte
	// body renders a non-streamed answer.
	body func(r Reply, model string, seq int) []byte
	// events renders a streamed answer, one SSE event per element.
	events func(r Reply, req map[string]any, model string, seq int) []string
	// streamError renders the SSE event of an error in a stream.
	streamError func(status int, msg string) string
}

func newServer(t testing.TB, f flavor, prefix string) *Server {
	t.Helper()
	s := &Server{t: t, flavor: f}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.baseURL = s.srv.URL + prefix
	t.Cleanup(func() {
		// Free handlers still holding a Delay so Close does not block.
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// URL is the base URL to configure the client with: it ends in /v1 for
// the OpenAI fake (as go-openai expects) and is the bare origin for the
// Anthropic fake (the SDK adds /v1/messages).
func (s *Server) URL() string { return s.baseURL }

// Close shuts the server down before the test ends: later connections to
// URL are refused, for connection-failure tests. Calling it again, or the
// cleanup that closes every server, is harmless.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Push queues replies; each request takes the first one.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	copy(out, s.reqs)
	return out
}

// Pending returns how many pushed replies no request has taken yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// take records req and pops the next reply.
func (s *Server) take(req Request) (Reply, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.queue) == 0 {
		return Reply{}, 0, false
	}
	r := s.queue[0]
	s.queue = s.queue[1:]
	s.seq++
	return r, s.seq, true
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away while sending
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if r.Method != http.MethodPost || r.URL.Path != s.flavor.path {
		s.t.Errorf("modeltest: %s fake got %s %s, want POST %s", s.flavor.name, r.Method, r.URL.Path, s.flavor.path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	reply, seq, ok := s.take(req)
	if !ok {
		s.t.Errorf("modeltest: %s fake got a request with no reply queued (request %d)", s.flavor.name, len(s.Requests()))
		s.writeJSON(w, http.StatusInternalServerError, s.flavor.errorBody(http.StatusInternalServerError, "modeltest: no reply queued"))
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	var wire map[string]any
	if err := req.Decode(&wire); err != nil {
		s.t.Errorf("modeltest: %s fake got a body that is not JSON: %v", s.flavor.name, err)
	}
	stream := req.Stream()
	model, _ := wire["model"].(string)
	if reply.Model != "" {
		model = reply.Model
	}
	switch {
	case reply.Raw != "":
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, reply.Raw)
	case status >= 400:
		s.writeJSON(w, status, s.flavor.errorBody(status, reply.Message))
	case stream:
		evs := s.flavor.events(reply, wire, model, seq)
		if reply.ErrorAfter > 0 && reply.ErrorAfter < len(evs) {
			evs = append(evs[:reply.ErrorAfter:reply.ErrorAfter], s.flavor.streamError(http.StatusInternalServerError, reply.Message))
		}
		s.writeStream(w, status, evs, reply.CutAfter)
	default:
		b := s.flavor.body(reply, model, seq)
		if reply.CutAfter > 0 && reply.CutAfter < len(b) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.WriteHeader(status)
			w.Write(b[:reply.CutAfter])
			cut(w) // does not return
		}
		s.writeJSON(w, status, b)
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func (s *Server) writeStream(w http.ResponseWriter, status int, evs []string, cutAfter int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	for i, ev := range evs {
		if cutAfter > 0 && i == cutAfter {
			cut(w)
		}
		io.WriteString(w, ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// cut flushes what was written and drops the connection without ending
// the response, the way a crashed proxy does: the client sees an
// unexpected EOF.
func cut(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

// sse formats one server-sent event.
func sse(name string, data []byte) string {
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	fmt.Fprintf(&b, "data: %s\n\n", data)
	return b.String()
}

// statusText is the default error message, including for Anthropic's
// 529, which net/http has no text for.
func statusText(status int) string {
	if status == 529 {
		return "Overloaded"
	}
	return http.StatusText(status)
}
