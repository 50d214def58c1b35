package openvikingtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Length limits of the sidecars, in runes.
const (
	AbstractMax = 256
	OverviewMax = 4000
)

// DefaultPolls is how many polls a task takes to complete when
// Options.Polls is zero.
const DefaultPolls = 2

// Options configure a Server.
type Options struct {
	// APIKey, if set, is required on every /api/v1 call, as
	// "Authorization: Bearer" or X-API-Key (401 UNAUTHENTICATED without).
	APIKey string
	// Polls is how many GET /api/v1/tasks/{id} a commit's task answers
	// before it is done: zero means DefaultPolls, negative never.
	Polls int
	// FailTasks makes every commit's task fail; the session's next commit
	// is then refused with 412 FAILED_PRECONDITION, as documented.
	FailTasks bool
}

// Server is a running double. Close it when done.
type Server struct {
	// URL is the base URL, like http://127.0.0.1:PORT.
	URL string

	srv  *httptest.Server
	opts Options
	done chan struct{} // closed by Close: ends the delays of SetDelay

	mu       sync.Mutex                  // protects everything below
	files    map[string]map[string]*file // account -> file URI -> file
	temps    map[string]tempFile
	sessions map[string]*sess // account/user/id
	tasks    map[string]*task
	next     int
	faults   []fault
	delay    time.Duration
	bad      bool

	requests atomic.Int64
}

type file struct {
	content string
}

type tempFile struct {
	name string
	data []byte
}

type sess struct {
	id, account, user string
	messages          []message
	archives          int
	failed            bool
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type task struct {
	id, account, user string
	sess              *sess
	archive           string
	msgs              []message
	polls             int
	status            string
	result            any
	err               string
}

type fault struct {
	status int
	code   string
}

// New starts a double.
func New(opts Options) *Server {
	s := &Server{opts: opts, done: make(chan struct{}), files: map[string]map[string]*file{}, temps: map[string]tempFile{},
		sessions: map[string]*sess{}, tasks: map[string]*task{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server: every later request fails to connect.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// Requests returns how many requests the server received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// FailNext makes the next request (after authentication) answer the
// error envelope with this HTTP status and error code.
func (s *Server) FailNext(status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{status, code})
}

// SetDelay makes every request wait d before it is answered (a slow
// server); the wait ends early if the client gives up.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetMalformed makes every /api/v1 call answer a truncated JSON body with
// status 200.
func (s *Server) SetMalformed(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bad = on
}

// Files returns the URIs of the files an account holds, sorted (for
// tests that check what a call stored).
func (s *Server) Files(account string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for u := range s.files[orDefault(account)] {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// apiError is an error answered in the envelope.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"status": "error", "error": map[string]any{"code": e.code, "message": e.msg, "details": map[string]any{}}, "time": 0.001})
}

// caller is who a request acts for.
type caller struct{ account, user string }

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	delay := s.delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-time.After(delay):
		}
	}
	if r.URL.Path == "/health" || r.URL.Path == "/ready" {
		writeJSON(w, 200, map[string]any{"status": "ok"})
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/api/v1/") {
		writeError(w, errorf(404, "NOT_FOUND", "no route %s", r.URL.Path))
		return
	}
	if k := s.opts.APIKey; k != "" {
		got := r.Header.Get("X-API-Key")
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			got = b
		}
		if got != k {
			writeError(w, errorf(401, "UNAUTHENTICATED", "missing or invalid API key"))
			return
		}
	}
	s.mu.Lock()
	if s.bad {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status": "ok", "result": {"memories": [`)
		return
	}
	if len(s.faults) > 0 {
		f := s.faults[0]
		s.faults = s.faults[1:]
		s.mu.Unlock()
		writeError(w, errorf(f.status, f.code, "injected fault"))
		return
	}
	s.mu.Unlock()
	c := caller{account: orDefault(r.Header.Get("X-OpenViking-Account")), user: orDefault(r.Header.Get("X-OpenViking-User"))}
	result, err := s.route(r, c)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"status": "ok", "result": result, "time": 0.001})
}

// decode reads a JSON body into v: malformed JSON is 400
// INVALID_ARGUMENT.
func decode(r *http.Request, v any) *apiError {
	if err := json.NewDecoder(io.LimitReader(r.Body, 32<<20)).Decode(v); err != nil {
		return errorf(400, "INVALID_ARGUMENT", "malformed JSON body: %v", err)
	}
	return nil
}

func (s *Server) route(r *http.Request, c caller) (any, *apiError) {
	p := strings.TrimPrefix(r.URL.Path, "/api/v1/")
	parts := strings.Split(p, "/")
	switch {
	case r.Method == "GET" && p == "system/status":
		return map[string]any{"initialized": true, "version": "openvikingtest", "user": c.user}, nil
	case r.Method == "POST" && p == "content/write":
		return s.write(r, c)
	case r.Method == "GET" && (p == "content/read" || p == "content/abstract" || p == "content/overview"):
		return s.tier(r, c, strings.TrimPrefix(p, "content/"))
	case r.Method == "GET" && p == "fs/ls":
		return s.ls(r, c)
	case r.Method == "DELETE" && p == "fs":
		return s.rm(r, c)
	case r.Method == "POST" && (p == "search/find" || p == "search/search"):
		return s.find(r, c, p == "search/search")
	case r.Method == "POST" && p == "resources/temp_upload":
		return s.upload(r)
	case r.Method == "POST" && p == "resources":
		return s.addResource(r, c)
	case r.Method == "POST" && p == "sessions":
		return s.createSession(r, c)
	case len(parts) == 3 && parts[0] == "sessions" && r.Method == "GET" && parts[1] != "":
		return s.getSession(c, parts[1])
	case len(parts) >= 3 && parts[0] == "sessions" && r.Method == "POST" && parts[2] == "messages":
		return s.addMessages(r, c, parts[1], len(parts) == 4 && parts[3] == "batch")
	case len(parts) == 3 && parts[0] == "sessions" && r.Method == "POST" && parts[2] == "commit":
		return s.commit(c, parts[1])
	case len(parts) == 2 && parts[0] == "tasks" && r.Method == "GET":
		return s.task(c, parts[1])
	}
	return nil, errorf(404, "NOT_FOUND", "no route %s %s", r.Method, r.URL.Path)
}

// resolve checks a URI parameter and applies the caller's isolation: a
// user's space is its own, viking://~ is the caller's user root (the
// home alias), and viking://session/{id} is the caller's session. It returns the canonical URI without a trailing slash.
func resolve(raw string, c caller) (string, *apiError) {
	rest, ok := strings.CutPrefix(raw, "viking://")
	if !ok || strings.ContainsAny(rest, "\x00\\") {
		return "", errorf(400, "INVALID_URI", "invalid Viking URI %q", raw)
	}
	rest = strings.TrimSuffix(rest, "/")
	scope, p, _ := strings.Cut(rest, "/")
	for _, seg := range strings.Split(p, "/") {
		if (seg == "" && p != "") || seg == "." || seg == ".." {
			return "", errorf(400, "INVALID_URI", "invalid Viking URI %q", raw)
		}
	}
	switch scope {
	case "resources", "agent":
	case "~":
		// The home alias: the caller's own user root.
		scope, p = "user", strings.TrimSuffix(c.user+"/"+p, "/")
	case "user":
		if u, _, _ := strings.Cut(p, "/"); u != "" && u != c.user {
			return "", errorf(403, "PERMISSION_DENIED", "user %s may not access %s", c.user, raw)
		}
	case "session":
		scope, p = "user", c.user+"/sessions/"+p
	default:
		return "", errorf(400, "INVALID_URI", "scope %q is not public", scope)
	}
	out := "viking://" + scope
	if p != "" {
		out += "/" + p
	}
	return out, nil
}
