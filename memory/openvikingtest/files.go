package openvikingtest

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"unicode"
)

// The file system of the double: writes, reads by tier, listings,
// removal, search and uploads.

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
