package openviking

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
)

// Scheme prefixes every OpenViking URI.
const Scheme = "viking://"

// Public URI scopes: the ones the API accepts in a uri parameter.
const (
	ScopeResources = "resources"
	ScopeUser      = "user"
	ScopeAgent     = "agent"
	ScopeSession   = "session" // an alias of the user's sessions
	// ScopeHome is the caller's own user root: viking://~/memories/ is
	// viking://user/{the caller}/memories/ (servers from v0.4.16 expand
	// it; the uid-less viking://user/memories/ they refuse).
	ScopeHome = "~"
)

// URI is a parsed viking:// URI: a scope and a slash-separated path.
type URI struct {
	Scope string
	Path  string // without leading or trailing slash; "" for the scope's root
	Dir   bool   // written with a trailing slash
}

// ParseURI checks that s is a viking:// URI with a public scope and no
// empty, "." or ".." segment. Errors match ErrInvalidArgument.
func ParseURI(s string) (URI, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return URI{}, fmt.Errorf("%w: uri %q: want %s…", ErrInvalidArgument, s, Scheme)
	}
	if strings.ContainsAny(rest, "\x00\\?#") {
		return URI{}, fmt.Errorf("%w: uri %q: bad character", ErrInvalidArgument, s)
	}
	u := URI{Dir: strings.HasSuffix(rest, "/")}
	rest = strings.TrimSuffix(rest, "/")
	u.Scope, u.Path, _ = strings.Cut(rest, "/")
	switch u.Scope {
	case ScopeResources, ScopeUser, ScopeAgent, ScopeSession, ScopeHome:
	default:
		return URI{}, fmt.Errorf("%w: uri %q: scope %q is not public (want resources, user, agent, session or ~)", ErrInvalidArgument, s, u.Scope)
	}
	if u.Path != "" {
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return URI{}, fmt.Errorf("%w: uri %q: empty or relative segment", ErrInvalidArgument, s)
			}
		}
	} else {
		u.Dir = true
	}
	return u, nil
}

// String formats the URI.
func (u URI) String() string {
	s := Scheme + u.Scope
	if u.Path != "" {
		s += "/" + u.Path
	}
	if u.Dir {
		s += "/"
	}
	return s
}

// Join returns the URI of a child of directory u.
func (u URI) Join(name ...string) URI {
	p := strings.Join(name, "/")
	if u.Path != "" {
		p = u.Path + "/" + p
	}
	return URI{Scope: u.Scope, Path: p}
}

// Home reports whether u is under the home alias, viking://~/.
func (u URI) Home() bool { return u.Scope == ScopeHome }

// ForUser returns u with the home alias expanded for user: the URI the
// server answers with (hits, written files) when user calls it with u.
// Any other URI is returned as it is.
func (u URI) ForUser(user string) URI {
	if !u.Home() {
		return u
	}
	p := user
	if u.Path != "" {
		p += "/" + u.Path
	}
	return URI{Scope: ScopeUser, Path: p, Dir: u.Dir}
}

// HomeURI is the caller's own user root, viking://~/.
func HomeURI() URI { return URI{Scope: ScopeHome, Dir: true} }

// UserURI is the root of a user's space, viking://user/{user}/.
func UserURI(user string) URI { return URI{Scope: ScopeUser, Path: user, Dir: true} }

// UserMemoriesURI is where a user's memories live.
func UserMemoriesURI(user string) URI {
	return URI{Scope: ScopeUser, Path: user + "/memories", Dir: true}
}

// AgentURI is the root of an agent's space.
func AgentURI(agent string) URI { return URI{Scope: ScopeAgent, Path: agent, Dir: true} }

// ResourcesURI is the root of the shared resources.
func ResourcesURI() URI { return URI{Scope: ScopeResources, Dir: true} }

// Write modes of content/write.
const (
	WriteCreate  = "create"  // a new file; ErrConflict if it exists
	WriteReplace = "replace" // an existing file; ErrNotFound if missing
	WriteAppend  = "append"
)

// WriteRequest is a content/write call.
type WriteRequest struct {
	URI     string `json:"uri"`
	Content string `json:"content"`
	Mode    string `json:"mode,omitempty"` // WriteReplace when empty
	// Wait makes the server refresh the file's abstract, overview and
	// vectors before answering, so a find right after sees it.
	Wait bool `json:"wait,omitempty"`
}

// WriteResult is what content/write returned.
type WriteResult struct {
	URI          string `json:"uri"`
	RootURI      string `json:"root_uri,omitempty"`
	Mode         string `json:"mode,omitempty"`
	WrittenBytes int    `json:"written_bytes"`
}

// Write runs POST /api/v1/content/write.
func (c *Client) Write(ctx context.Context, req WriteRequest) (WriteResult, error) {
	var out WriteResult
	if _, err := ParseURI(req.URI); err != nil {
		return out, err
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/content/write", nil, req, &out)
	return out, err
}

// Read runs GET /api/v1/content/read: a file's full content (L2).
func (c *Client) Read(ctx context.Context, uri string) (string, error) {
	return c.tier(ctx, "read", uri)
}

// Abstract runs GET /api/v1/content/abstract: the L0 abstract of a file
// or directory.
func (c *Client) Abstract(ctx context.Context, uri string) (string, error) {
	return c.tier(ctx, "abstract", uri)
}

// Overview runs GET /api/v1/content/overview: the L1 overview.
func (c *Client) Overview(ctx context.Context, uri string) (string, error) {
	return c.tier(ctx, "overview", uri)
}

func (c *Client) tier(ctx context.Context, which, uri string) (string, error) {
	if _, err := ParseURI(uri); err != nil {
		return "", err
	}
	var out string
	err := c.do(ctx, http.MethodGet, "/api/v1/content/"+which, url.Values{"uri": {uri}}, nil, &out)
	return out, err
}

// Entry is one listed file or directory.
type Entry struct {
	URI   string `json:"uri"`
	Name  string `json:"name"`
	IsDir bool   `json:"isDir"`
	Size  int64  `json:"size"`
}

// List runs GET /api/v1/fs/ls on a directory.
func (c *Client) List(ctx context.Context, uri string, recursive bool) ([]Entry, error) {
	if _, err := ParseURI(uri); err != nil {
		return nil, err
	}
	q := url.Values{"uri": {uri}}
	if recursive {
		q.Set("recursive", "true")
	}
	var out []Entry
	err := c.do(ctx, http.MethodGet, "/api/v1/fs/ls", q, nil, &out)
	return out, err
}

// Delete runs DELETE /api/v1/fs on a file (or, with recursive, a
// directory).
func (c *Client) Delete(ctx context.Context, uri string, recursive bool) error {
	if _, err := ParseURI(uri); err != nil {
		return err
	}
	q := url.Values{"uri": {uri}}
	if recursive {
		q.Set("recursive", "true")
	}
	return c.do(ctx, http.MethodDelete, "/api/v1/fs", q, nil, nil)
}

// SearchRequest is a search/search call: find with session context.
type SearchRequest struct {
	Query          string   `json:"query"`
	TargetURI      string   `json:"target_uri,omitempty"`
	SessionID      string   `json:"session_id,omitempty"`
	Limit          int      `json:"limit,omitempty"`
	ScoreThreshold *float64 `json:"score_threshold,omitempty"`
}

// Search runs POST /api/v1/search/search.
func (c *Client) Search(ctx context.Context, req SearchRequest) (FindResult, error) {
	var out FindResult
	if strings.TrimSpace(req.Query) == "" {
		return out, fmt.Errorf("%w: search: empty query", ErrInvalidArgument)
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/search/search", nil, req, &out)
	return out, err
}

// TempUpload runs POST /api/v1/resources/temp_upload with a file's bytes
// (a multipart form, field "file") and returns the temp_file_id to pass
// to AddResource: the server never reads a path on the client's disk.
func (c *Client) TempUpload(ctx context.Context, name string, data []byte) (string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", name)
	if err == nil {
		_, err = fw.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", fmt.Errorf("openviking: resources/temp_upload: %w", err)
	}
	var out struct {
		TempFileID string `json:"temp_file_id"`
	}
	if err := c.send(ctx, http.MethodPost, "/api/v1/resources/temp_upload", nil, mw.FormDataContentType(), buf.Bytes(), &out); err != nil {
		return "", err
	}
	if out.TempFileID == "" {
		return "", fmt.Errorf("%w: resources/temp_upload: no temp_file_id", ErrMalformed)
	}
	return out.TempFileID, nil
}

// ResourceRequest is a resources call: a remote URL (Path) or an
// uploaded file (TempFileID), placed at To or under Parent.
type ResourceRequest struct {
	Path       string `json:"path,omitempty"`
	TempFileID string `json:"temp_file_id,omitempty"`
	To         string `json:"to,omitempty"`
	Parent     string `json:"parent,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Wait       bool   `json:"wait,omitempty"`
}

// ResourceResult is what adding a resource returned.
type ResourceResult struct {
	Status  string   `json:"status"`
	RootURI string   `json:"root_uri"`
	Errors  []string `json:"errors,omitempty"`
}

// AddResource runs POST /api/v1/resources.
func (c *Client) AddResource(ctx context.Context, req ResourceRequest) (ResourceResult, error) {
	var out ResourceResult
	if (req.Path == "") == (req.TempFileID == "") {
		return out, fmt.Errorf("%w: resources: want one of path and temp_file_id", ErrInvalidArgument)
	}
	if req.To != "" && req.Parent != "" {
		return out, fmt.Errorf("%w: resources: to and parent exclude each other", ErrInvalidArgument)
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/resources", nil, req, &out)
	return out, err
}

// Message is one message added to a session.
type Message struct {
	Role    string `json:"role"` // user or assistant
	Content string `json:"content"`
}

// AddMessages runs POST /api/v1/sessions/{id}/messages/batch (at most
// 100 messages per call; more are sent in several calls).
func (c *Client) AddMessages(ctx context.Context, session string, msgs []Message) error {
	for _, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("%w: add messages: role %q: want user or assistant", ErrInvalidArgument, m.Role)
		}
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 100)
		if err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(session)+"/messages/batch", nil,
			map[string]any{"messages": msgs[:n]}, nil); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// SystemStatus runs GET /api/v1/system/status and returns its result as
// the server sent it (its version and components' state; the fields vary
// between server versions, so they are not decoded).
func (c *Client) SystemStatus(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	err := c.do(ctx, http.MethodGet, "/api/v1/system/status", nil, nil, &out)
	return out, err
}
