package opensandboxtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultLinger is how long execd keeps a command stream open after its
// terminal event (about a second).
const DefaultLinger = time.Second

// Options configure a Server. Zero values are usable except Root.
type Options struct {
	// Root is the part of the host filesystem sandboxes may use; container
	// paths below it map to the same host paths. Required.
	Root string
	// APIKey, when set, is required in the OPEN-SANDBOX-API-KEY header of
	// lifecycle requests.
	APIKey string
	// PendingPolls makes a new sandbox report Pending for this many GETs
	// before Running (the create response then says Pending too), as a
	// Kubernetes-backed server does.
	PendingPolls int
	// PingFailures makes execd's /ping fail with 502 this many times per
	// sandbox before it answers, as while a container starts.
	PingFailures int
	// PingInterval is the period of "ping" events in a command stream.
	// Zero means 3 s, execd's period.
	PingInterval time.Duration
	// DataPrefix writes stream frames as "data: {...}" (proper SSE)
	// instead of execd's bare JSON.
	DataPrefix bool
	// MaxLine is the longest output line sent as one event. Zero means
	// 1 MiB.
	MaxLine int
	// Linger is how long a command stream stays open after its terminal
	// event. Zero means DefaultLinger, as execd; negative means until the
	// client hangs up, so a client that waits for the end of the body
	// instead of the terminal event hangs and its test fails. (The
	// official TypeScript SDK reads to the end of the body: against a
	// stream that never ends it hangs.)
	Linger time.Duration
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:<port>".
	URL string
	// Domain is the URL without scheme, the form OPEN_SANDBOX_DOMAIN takes.
	Domain string

	opts Options
	hs   *httptest.Server
	quit chan struct{} // closed by Close: lingering streams end

	mu        sync.Mutex // protects following fields
	sandboxes map[string]*box
	requests  []string
}

// box is one fake sandbox.
type box struct {
	id         string
	token      string
	created    time.Time
	expires    time.Time
	entrypoint []string
	metadata   map[string]string

	mu       sync.Mutex // protects following fields
	pending  int
	pingFail int
	execs    map[string]*running
}

// NewServer starts a server; Close stops it.
func NewServer(opts Options) *Server {
	if opts.Root == "" {
		panic("opensandboxtest: Options.Root is required")
	}
	opts.Root = filepath.Clean(opts.Root)
	if opts.PingInterval == 0 {
		opts.PingInterval = 3 * time.Second
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	if opts.MaxLine == 0 {
		opts.MaxLine = 1 << 20
	}
	s := &Server{opts: opts, quit: make(chan struct{}), sandboxes: make(map[string]*box)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
	})
	mux.HandleFunc("POST /v1/sandboxes", s.auth(s.create))
	mux.HandleFunc("GET /v1/sandboxes/{id}", s.auth(s.withBox(s.get)))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", s.auth(s.withBox(s.delete)))
	mux.HandleFunc("GET /v1/sandboxes/{id}/endpoints/{port}", s.auth(s.withBox(s.endpoint)))
	// The server-proxy route shape; like the real one it needs no API key,
	// but execd checks its own token.
	mux.HandleFunc("/sandboxes/{id}/proxy/{port}/{rest...}", s.withBox(s.execd))
	// The address is known before serving, so handlers (endpoint) read
	// Domain without racing with its assignment.
	s.hs = httptest.NewUnstartedServer(s.logged(mux))
	s.URL = "http://" + s.hs.Listener.Addr().String()
	s.Domain = strings.TrimPrefix(s.URL, "http://")
	s.hs.Start()
	return s
}

// Close kills every running command and stops the server.
func (s *Server) Close() {
	close(s.quit)
	s.mu.Lock()
	boxes := slices.Collect(maps.Values(s.sandboxes))
	s.mu.Unlock()
	for _, b := range boxes {
		b.killAll()
	}
	s.hs.Close()
}

// Sandboxes returns the ids of the sandboxes that exist, sorted.
func (s *Server) Sandboxes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Collect(maps.Keys(s.sandboxes))
	slices.Sort(ids)
	return ids
}

// Requests returns "METHOD /path" for every request so far, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// auth checks the lifecycle API key like the server's middleware.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.APIKey != "" {
			switch key := r.Header.Get("OPEN-SANDBOX-API-KEY"); {
			case key == "":
				writeError(w, http.StatusUnauthorized, "MISSING_API_KEY", "Authentication credentials were not provided")
				return
			case key != s.opts.APIKey:
				writeError(w, http.StatusUnauthorized, "INVALID_API_KEY", "Authentication credentials are invalid")
				return
			}
		}
		h(w, r)
	}
}

func (s *Server) withBox(h func(http.ResponseWriter, *http.Request, *box)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b := s.sandboxes[r.PathValue("id")]
		s.mu.Unlock()
		if b == nil {
			writeError(w, http.StatusNotFound, "DOCKER::SANDBOX_NOT_FOUND", fmt.Sprintf("Sandbox %s not found.", r.PathValue("id")))
			return
		}
		h(w, r, b)
	}
}

// validationError is FastAPI's 422 body.
func validationError(w http.ResponseWriter, loc []any, typ, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"detail": []map[string]any{{"type": typ, "loc": loc, "msg": msg, "input": nil}},
	})
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Image *struct {
			URI string `json:"uri"`
		} `json:"image"`
		SnapshotID     string            `json:"snapshotId"`
		Entrypoint     []string          `json:"entrypoint"`
		Timeout        *int              `json:"timeout"`
		ResourceLimits map[string]string `json:"resourceLimits"`
		Metadata       map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		validationError(w, []any{"body"}, "json_invalid", "JSON decode error: "+err.Error())
		return
	}
	switch {
	case (req.Image == nil || req.Image.URI == "") == (req.SnapshotID == ""):
		validationError(w, []any{"body"}, "value_error", "Value error, exactly one of image or snapshotId is required")
		return
	case req.Image != nil && len(req.Entrypoint) == 0:
		validationError(w, []any{"body", "entrypoint"}, "value_error", "Value error, entrypoint is required when image is set")
		return
	case req.ResourceLimits == nil:
		validationError(w, []any{"body", "resourceLimits"}, "missing", "Field required")
		return
	case req.Timeout != nil && *req.Timeout < 60:
		validationError(w, []any{"body", "timeout"}, "greater_than_equal", "Input should be greater than or equal to 60")
		return
	}
	now := time.Now().UTC()
	b := &box{
		id: newID(), token: newID(), created: now, entrypoint: req.Entrypoint, metadata: req.Metadata,
		pending: s.opts.PendingPolls, pingFail: s.opts.PingFailures, execs: make(map[string]*running),
	}
	if req.Timeout != nil {
		b.expires = now.Add(time.Duration(*req.Timeout) * time.Second)
	}
	s.mu.Lock()
	s.sandboxes[b.id] = b
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, b.describe(false))
}

// describe renders the Sandbox object; poll counts a GET against the
// Pending phase.
func (b *box) describe(poll bool) map[string]any {
	b.mu.Lock()
	state, reason := "Running", "CONTAINER_RUNNING"
	if b.pending > 0 {
		state, reason = "Pending", "CONTAINER_STARTING"
		if poll {
			b.pending--
		}
	}
	b.mu.Unlock()
	out := map[string]any{
		"id":         b.id,
		"status":     map[string]any{"state": state, "reason": reason, "lastTransitionAt": b.created.Format(time.RFC3339Nano)},
		"createdAt":  b.created.Format(time.RFC3339Nano),
		"entrypoint": b.entrypoint,
	}
	if len(b.metadata) > 0 {
		out["metadata"] = b.metadata
	}
	if !b.expires.IsZero() {
		out["expiresAt"] = b.expires.Format(time.RFC3339Nano)
	}
	return out
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, b *box) {
	writeJSON(w, http.StatusOK, b.describe(true))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, b *box) {
	s.mu.Lock()
	delete(s.sandboxes, b.id)
	s.mu.Unlock()
	b.killAll()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) endpoint(w http.ResponseWriter, r *http.Request, b *box) {
	// No scheme and a path prefix, like the server-proxy endpoint, so the
	// client's URL joining is exercised; the header must be sent back on
	// every execd request.
	writeJSON(w, http.StatusOK, map[string]any{
		"endpoint": fmt.Sprintf("%s/sandboxes/%s/proxy/%s", s.Domain, b.id, r.PathValue("port")),
		"headers":  map[string]string{"X-EXECD-ACCESS-TOKEN": b.token},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError writes the {code, message} envelope both services use.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"code": code, "message": message})
}

// newID returns a random UUID4 string.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
