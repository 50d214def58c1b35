package openvikingtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
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

var writeExts = []string{".md", ".txt", ".json", ".yaml", ".yml", ".toml", ".py", ".js", ".ts"}

func (s *Server) write(r *http.Request, c caller) (any, *apiError) {
	var req struct {
		URI     *string `json:"uri"`
		Content *string `json:"content"`
		Mode    string  `json:"mode"`
		Wait    bool    `json:"wait"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.URI == nil || req.Content == nil {
		return nil, errorf(400, "INVALID_ARGUMENT", "uri and content are required")
	}
	u, err := resolve(*req.URI, c)
	if err != nil {
		return nil, err
	}
	base := path.Base(u)
	if base == ".abstract.md" || base == ".overview.md" || base == ".relations.json" {
		return nil, errorf(400, "INVALID_ARGUMENT", "%s is derived and cannot be written", base)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.account(c.account)
	if s.isDir(fs, u) {
		return nil, errorf(400, "INVALID_ARGUMENT", "%s is a directory", u)
	}
	f, exists := fs[u]
	switch mode := orMode(req.Mode); mode {
	case "create":
		if !slices.Contains(writeExts, path.Ext(u)) {
			return nil, errorf(400, "INVALID_ARGUMENT", "create accepts only %s files", strings.Join(writeExts, " "))
		}
		if exists {
			return nil, errorf(409, "ALREADY_EXISTS", "%s already exists", u)
		}
		fs[u] = &file{content: *req.Content}
	case "replace", "append":
		if !exists {
			return nil, errorf(404, "NOT_FOUND", "Resource not found: %s", u)
		}
		if mode == "replace" {
			f.content = *req.Content
		} else {
			f.content += *req.Content
		}
	default:
		return nil, errorf(400, "INVALID_ARGUMENT", "mode %q: want replace, append or create", req.Mode)
	}
	return map[string]any{"uri": u, "root_uri": u, "context_type": contextType(u), "mode": orMode(req.Mode),
		"written_bytes": len(*req.Content), "content_updated": true, "semantic_status": "completed", "vector_status": "completed"}, nil
}

func orMode(m string) string {
	if m == "" {
		return "replace"
	}
	return m
}

func (s *Server) account(a string) map[string]*file {
	fs := s.files[a]
	if fs == nil {
		fs = map[string]*file{}
		s.files[a] = fs
	}
	return fs
}

func (s *Server) isDir(fs map[string]*file, u string) bool {
	if u == "viking://resources" || u == "viking://user" || u == "viking://agent" || strings.Count(u, "/") == 3 && strings.HasPrefix(u, "viking://user/") {
		return true
	}
	for k := range fs {
		if strings.HasPrefix(k, u+"/") {
			return true
		}
	}
	return false
}

func (s *Server) tier(r *http.Request, c caller, which string) (any, *apiError) {
	u, err := resolve(r.URL.Query().Get("uri"), c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.account(c.account)
	if f, ok := fs[u]; ok {
		switch which {
		case "abstract":
			return clip(f.content, AbstractMax), nil
		case "overview":
			return clip(f.content, OverviewMax), nil
		}
		return f.content, nil
	}
	if !s.isDir(fs, u) {
		return nil, errorf(404, "NOT_FOUND", "Resource not found: %s", u)
	}
	if which == "read" {
		return nil, errorf(400, "INVALID_ARGUMENT", "%s is a directory: read takes a file", u)
	}
	// A directory's sidecars summarize its files' abstracts.
	var b strings.Builder
	for _, k := range sortedKeys(fs) {
		if strings.HasPrefix(k, u+"/") {
			fmt.Fprintf(&b, "%s: %s\n", strings.TrimPrefix(k, u+"/"), clip(fs[k].content, AbstractMax))
		}
	}
	if which == "abstract" {
		return clip(b.String(), AbstractMax), nil
	}
	return clip(b.String(), OverviewMax), nil
}

func (s *Server) ls(r *http.Request, c caller) (any, *apiError) {
	u, err := resolve(r.URL.Query().Get("uri"), c)
	if err != nil {
		return nil, err
	}
	recursive := r.URL.Query().Get("recursive") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.account(c.account)
	if _, ok := fs[u]; ok {
		return nil, errorf(400, "INVALID_ARGUMENT", "%s is a file", u)
	}
	if !s.isDir(fs, u) {
		return nil, errorf(404, "NOT_FOUND", "Resource not found: %s", u)
	}
	out := []map[string]any{}
	seen := map[string]bool{}
	for _, k := range sortedKeys(fs) {
		rel, ok := strings.CutPrefix(k, u+"/")
		if !ok {
			continue
		}
		if recursive {
			out = append(out, map[string]any{"uri": k, "name": path.Base(k), "isDir": false, "size": len(fs[k].content)})
			continue
		}
		name, _, deeper := strings.Cut(rel, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		if deeper {
			out = append(out, map[string]any{"uri": u + "/" + name + "/", "name": name, "isDir": true, "size": 0})
		} else {
			out = append(out, map[string]any{"uri": k, "name": name, "isDir": false, "size": len(fs[k].content)})
		}
	}
	return out, nil
}

func (s *Server) rm(r *http.Request, c caller) (any, *apiError) {
	u, err := resolve(r.URL.Query().Get("uri"), c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.account(c.account)
	if _, ok := fs[u]; ok {
		delete(fs, u)
		return map[string]any{"uri": u}, nil
	}
	if !s.isDir(fs, u) {
		return nil, errorf(404, "NOT_FOUND", "Resource not found: %s", u)
	}
	if r.URL.Query().Get("recursive") != "true" {
		return nil, errorf(400, "INVALID_ARGUMENT", "%s is a directory: pass recursive=true", u)
	}
	for k := range fs {
		if strings.HasPrefix(k, u+"/") {
			delete(fs, k)
		}
	}
	return map[string]any{"uri": u}, nil
}

func sortedKeys(fs map[string]*file) []string {
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clip cuts s to n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func contextType(u string) string {
	switch {
	case strings.Contains(u, "/memories/"):
		return "memory"
	case strings.HasPrefix(u, "viking://agent/") && strings.Contains(u, "/skills/"):
		return "skill"
	}
	return "resource"
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

func (s *Server) find(r *http.Request, c caller, withSession bool) (any, *apiError) {
	var req struct {
		Query          *string  `json:"query"`
		TargetURI      string   `json:"target_uri"`
		SessionID      string   `json:"session_id"`
		Limit          *int     `json:"limit"`
		ScoreThreshold *float64 `json:"score_threshold"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Query == nil || strings.TrimSpace(*req.Query) == "" {
		return nil, errorf(400, "INVALID_ARGUMENT", "query is required")
	}
	limit := 10
	if req.Limit != nil {
		if *req.Limit < 1 {
			return nil, errorf(400, "INVALID_ARGUMENT", "limit must be positive")
		}
		limit = *req.Limit
	}
	target := ""
	if req.TargetURI != "" {
		u, err := resolve(req.TargetURI, c)
		if err != nil {
			return nil, err
		}
		target = u
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if withSession && req.SessionID != "" {
		if _, ok := s.sessions[c.account+"/"+c.user+"/"+req.SessionID]; !ok {
			return nil, errorf(404, "NOT_FOUND", "session %s not found", req.SessionID)
		}
	}
	q := words(*req.Query)
	type hit struct {
		uri   string
		score float64
	}
	var hits []hit
	for u, f := range s.account(c.account) {
		if target != "" && u != target && !strings.HasPrefix(u, target+"/") {
			continue
		}
		if strings.HasPrefix(u, "viking://user/") && !strings.HasPrefix(u, "viking://user/"+c.user+"/") {
			continue // another user's space
		}
		if strings.Contains(u, "/sessions/") {
			continue // archives are not contexts
		}
		have := words(f.content)
		n := 0
		for w := range q {
			if have[w] {
				n++
			}
		}
		if n == 0 || len(q) == 0 {
			continue
		}
		sc := float64(n) / float64(len(q))
		if req.ScoreThreshold != nil && sc < *req.ScoreThreshold {
			continue
		}
		hits = append(hits, hit{u, sc})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.uri, b.uri)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	res := map[string][]map[string]any{"memories": {}, "resources": {}, "skills": {}}
	fs := s.account(c.account)
	for _, h := range hits {
		ct := contextType(h.uri)
		group := map[string]string{"memory": "memories", "resource": "resources", "skill": "skills"}[ct]
		res[group] = append(res[group], map[string]any{"uri": h.uri, "context_type": ct, "is_leaf": true, "level": 2,
			"abstract": clip(fs[h.uri].content, AbstractMax), "score": h.score, "match_reason": "lexical"})
	}
	return map[string]any{"memories": res["memories"], "resources": res["resources"], "skills": res["skills"], "total": len(hits)}, nil
}

func (s *Server) upload(r *http.Request) (any, *apiError) {
	f, hdr, err := r.FormFile("file")
	if err != nil {
		return nil, errorf(400, "INVALID_ARGUMENT", "want a multipart form with a file field: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 32<<20))
	if err != nil {
		return nil, errorf(400, "INVALID_ARGUMENT", "read upload: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := fmt.Sprintf("upload_%04d", s.next)
	s.temps[id] = tempFile{name: path.Base(hdr.Filename), data: data}
	return map[string]any{"temp_file_id": id}, nil
}

func (s *Server) addResource(r *http.Request, c caller) (any, *apiError) {
	var req struct {
		Path       string `json:"path"`
		TempFileID string `json:"temp_file_id"`
		To         string `json:"to"`
		Parent     string `json:"parent"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if (req.Path == "") == (req.TempFileID == "") {
		return nil, errorf(400, "INVALID_ARGUMENT", "want one of path and temp_file_id")
	}
	if req.To != "" && req.Parent != "" {
		return nil, errorf(400, "INVALID_ARGUMENT", "to and parent exclude each other")
	}
	if req.Path != "" {
		return nil, errorf(400, "INVALID_ARGUMENT", "this test double does not fetch %q: upload the file", req.Path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.temps[req.TempFileID]
	if !ok {
		return nil, errorf(404, "NOT_FOUND", "temp file %s not found", req.TempFileID)
	}
	dest := req.To
	if dest == "" {
		parent := req.Parent
		if parent == "" {
			parent = "viking://resources/"
		}
		dest = strings.TrimSuffix(parent, "/") + "/" + t.name
	}
	u, err := resolve(dest, c)
	if err != nil {
		return nil, err
	}
	delete(s.temps, req.TempFileID)
	s.account(c.account)[u] = &file{content: string(t.data)}
	return map[string]any{"status": "success", "root_uri": u, "source_path": t.name, "meta": map[string]any{}, "errors": []string{}}, nil
}

func (s *Server) createSession(r *http.Request, c caller) (any, *apiError) {
	var req struct {
		SessionID string `json:"session_id"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.SessionID == "" {
		s.next++
		req.SessionID = fmt.Sprintf("s%06d", s.next)
	} else if strings.ContainsAny(req.SessionID, "/\\") {
		return nil, errorf(400, "INVALID_ARGUMENT", "bad session id")
	}
	k := c.account + "/" + c.user + "/" + req.SessionID
	if _, ok := s.sessions[k]; ok {
		return nil, errorf(409, "ALREADY_EXISTS", "session %s exists", req.SessionID)
	}
	s.sessions[k] = &sess{id: req.SessionID, account: c.account, user: c.user}
	return map[string]any{"session_id": req.SessionID, "uri": "viking://user/" + c.user + "/sessions/" + req.SessionID,
		"user": map[string]any{"account_id": c.account, "user_id": c.user}}, nil
}

func (s *Server) session(c caller, id string) (*sess, *apiError) {
	se, ok := s.sessions[c.account+"/"+c.user+"/"+id]
	if !ok {
		return nil, errorf(404, "NOT_FOUND", "session %s not found", id)
	}
	return se, nil
}

func (s *Server) getSession(c caller, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.session(c, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session_id": se.id, "message_count": len(se.messages), "commit_count": se.archives}, nil
}

func (s *Server) addMessages(r *http.Request, c caller, id string, batch bool) (any, *apiError) {
	var msgs []message
	if batch {
		var req struct {
			Messages []message `json:"messages"`
		}
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		if len(req.Messages) == 0 || len(req.Messages) > 100 {
			return nil, errorf(400, "INVALID_ARGUMENT", "want 1 to 100 messages")
		}
		msgs = req.Messages
	} else {
		var m message
		if err := decode(r, &m); err != nil {
			return nil, err
		}
		msgs = []message{m}
	}
	for _, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, errorf(400, "INVALID_ARGUMENT", "role %q: want user or assistant", m.Role)
		}
		if m.Content == "" {
			return nil, errorf(400, "INVALID_ARGUMENT", "content or parts is required")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.session(c, id)
	if err != nil {
		return nil, err
	}
	se.messages = append(se.messages, msgs...)
	return map[string]any{"session_id": id, "message_count": len(se.messages), "added": len(msgs)}, nil
}

func (s *Server) commit(c caller, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.session(c, id)
	if err != nil {
		return nil, err
	}
	if se.failed {
		return nil, errorf(412, "FAILED_PRECONDITION", "an earlier archive of session %s failed", id)
	}
	if len(se.messages) == 0 {
		return map[string]any{"session_id": id, "status": "skipped", "task_id": nil, "archive_uri": nil, "archived": false, "reason": "no_messages"}, nil
	}
	se.archives++
	archive := fmt.Sprintf("viking://user/%s/sessions/%s/history/archive_%03d", c.user, id, se.archives)
	var jl strings.Builder
	for _, m := range se.messages {
		b, _ := json.Marshal(m)
		jl.Write(b)
		jl.WriteByte('\n')
	}
	s.account(c.account)[archive+"/messages.jsonl"] = &file{content: jl.String()}
	s.next++
	t := &task{id: fmt.Sprintf("task-%06d", s.next), account: c.account, user: c.user, sess: se, archive: archive, msgs: se.messages, status: "pending"}
	s.tasks[t.id] = t
	se.messages = nil
	return map[string]any{"session_id": id, "status": "accepted", "task_id": t.id, "archive_uri": archive, "archived": true}, nil
}

func (s *Server) task(c caller, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.account != c.account || t.user != c.user {
		return nil, errorf(404, "NOT_FOUND", "task %s not found", id)
	}
	if t.status == "pending" || t.status == "running" {
		t.polls++
		polls := s.opts.Polls
		if polls == 0 {
			polls = DefaultPolls
		}
		switch {
		case polls > 0 && t.polls >= polls:
			s.finish(t)
		default:
			t.status = "running"
		}
	}
	out := map[string]any{"task_id": t.id, "task_type": "session_commit", "status": t.status, "resource_id": t.sess.id}
	if t.result != nil {
		out["result"] = t.result
	}
	if t.err != "" {
		out["error"] = t.err
	}
	return out, nil
}

// finish runs the task's phase 2. Caller holds s.mu.
func (s *Server) finish(t *task) {
	fs := s.account(t.account)
	if s.opts.FailTasks {
		t.status, t.err = "failed", "memory extraction failed"
		t.sess.failed = true
		fs[t.archive+"/.failed.json"] = &file{content: `{"error": "memory extraction failed"}`}
		return
	}
	n := 0
	for i, m := range t.msgs {
		if m.Role != "user" {
			continue
		}
		fs[fmt.Sprintf("viking://user/%s/memories/events/%s_%s_%d.md", t.user, t.sess.id, path.Base(t.archive), i)] = &file{content: m.Content}
		n++
	}
	fs[t.archive+"/.done"] = &file{}
	t.status = "completed"
	t.result = map[string]any{"session_id": t.sess.id, "archive_uri": t.archive, "memories_extracted": map[string]int{"events": n, "total": n}}
}
