package openviking

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorath/rath/internal/httporigin"
)

// DefaultTimeout bounds one request when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxBody bounds a response body: a larger one is ErrMalformed.
const maxBody = 16 << 20

// Options configure a Client.
type Options struct {
	// URL is the server's base URL, like http://localhost:1933.
	URL string
	// APIKey, if set, is sent with every request.
	APIKey string
	// KeyHeader is "bearer" (Authorization: Bearer, the default) or
	// "x-api-key".
	KeyHeader string
	// Agent, if set, is sent as X-OpenViking-Agent.
	Agent string
	// Account and User, if set, are sent as X-OpenViking-Account and
	// X-OpenViking-User: the tenant a multi-tenant server acts for.
	Account, User string
	// HTTPClient makes the requests (a copy of it: its CheckRedirect runs
	// after the client's own refusal of a redirect to another origin).
	// Nil means a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request. Zero means DefaultTimeout.
	Timeout time.Duration
}

// Client calls one OpenViking server. It is safe for concurrent use.
type Client struct {
	base *url.URL
	opts Options
	hc   *http.Client
}

// New checks opts and returns a client; it makes no request.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: server URL %q: want http(s)://host[:port]", ErrInvalidArgument, opts.URL)
	}
	switch strings.ToLower(opts.KeyHeader) {
	case "", "bearer", "x-api-key":
	default:
		return nil, fmt.Errorf("%w: key header %q: want bearer or x-api-key", ErrInvalidArgument, opts.KeyHeader)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	hc := &http.Client{Timeout: opts.Timeout}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient // the caller's client is left as it was
		hc = &c
	}
	hc.CheckRedirect = sameOrigin(u, hc.CheckRedirect)
	return &Client{base: u, opts: opts, hc: hc}, nil
}

// sameOrigin refuses a redirect to another origin (scheme, host and port)
// than base's, then defers to next (nil: Go's limit of 10 redirects). The
// key travels in a header, and Go copies headers into a redirect: X-API-Key
// to any host, Authorization to any port of the same host name.
func sameOrigin(base *url.URL, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	want := httporigin.Of(base)
	return func(r *http.Request, via []*http.Request) error {
		if got := httporigin.Of(r.URL); got != want {
			return &CrossOriginError{Server: base.Redacted(), URL: r.URL.Redacted()}
		}
		if next != nil {
			return next(r, via)
		}
		if len(via) >= 10 {
			return errors.New("openviking: stopped after 10 redirects")
		}
		return nil
	}
}

// envelope is every response's shape.
type envelope struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// do sends one request (body, if not nil, as JSON) and decodes the
// envelope's result into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	if body == nil {
		return c.send(ctx, method, path, query, "", nil, out)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("openviking: %s: %w", strings.TrimPrefix(path, "/api/v1/"), err)
	}
	return c.send(ctx, method, path, query, "application/json", raw, out)
}

// send sends one request with a body of content type ct (none if ct is
// empty) and decodes the envelope's result into out (if not nil).
func (c *Client) send(ctx context.Context, method, path string, query url.Values, ct string, body []byte, out any) error {
	op := strings.TrimPrefix(path, "/api/v1/")
	u := c.base.JoinPath(path)
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	var rd io.Reader
	if ct != "" {
		rd = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("openviking: %s: %w", op, err)
	}
	if c.opts.APIKey != "" {
		if strings.EqualFold(c.opts.KeyHeader, "x-api-key") {
			req.Header.Set("X-API-Key", c.opts.APIKey)
		} else {
			req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
		}
	}
	if c.opts.Agent != "" {
		req.Header.Set("X-OpenViking-Agent", c.opts.Agent)
	}
	if c.opts.Account != "" {
		req.Header.Set("X-OpenViking-Account", c.opts.Account)
	}
	if c.opts.User != "" {
		req.Header.Set("X-OpenViking-User", c.opts.User)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := c.hc.Do(req)
	if ce := (*CrossOriginError)(nil); errors.As(err, &ce) {
		return fmt.Errorf("openviking: %s: %w", op, ce)
	}
	if err != nil {
		// The URL holds no key (it goes in a header), so the transport's
		// error is safe to show.
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, op, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("%w: %s: read response: %v", ErrUnavailable, op, err)
	}
	if len(raw) > maxBody {
		return fmt.Errorf("%w: %s: response over %d bytes", ErrMalformed, op, maxBody)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || (env.Status != "ok" && env.Status != "error") {
		if res.StatusCode >= 400 {
			// A proxy or a crashed server answered: keep the status.
			return &Error{Op: op, Status: res.StatusCode, Message: snippet(raw)}
		}
		return fmt.Errorf("%w: %s: %d %s", ErrMalformed, op, res.StatusCode, snippet(raw))
	}
	if env.Status == "error" || res.StatusCode >= 400 {
		e := &Error{Op: op, Status: res.StatusCode}
		if env.Error != nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("%w: %s: result: %v", ErrMalformed, op, err)
	}
	return nil
}

// snippet is the start of a body for an error message.
func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Health checks that the server answers GET /health with {"status":"ok"}.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/health", nil, nil, nil)
}

// FindRequest is a search/find call: a query without session context.
type FindRequest struct {
	Query string `json:"query"`
	// TargetURI limits the search to a viking:// prefix.
	TargetURI string `json:"target_uri,omitempty"`
	// Limit is the maximum number of hits; zero means the server's (10).
	Limit int `json:"limit,omitempty"`
	// ScoreThreshold, if set, drops hits scored below it.
	ScoreThreshold *float64 `json:"score_threshold,omitempty"`
}

// Context is one matched context.
type Context struct {
	URI         string  `json:"uri"`
	ContextType string  `json:"context_type"`
	IsLeaf      bool    `json:"is_leaf"`
	Level       int     `json:"level"` // 0 abstract, 1 overview, 2 content
	Abstract    string  `json:"abstract"`
	Overview    string  `json:"overview,omitempty"`
	Category    string  `json:"category,omitempty"`
	Score       float64 `json:"score"`
	MatchReason string  `json:"match_reason,omitempty"`
}

// FindResult is what find and search return.
type FindResult struct {
	Memories  []Context `json:"memories"`
	Resources []Context `json:"resources"`
	Skills    []Context `json:"skills"`
	Total     int       `json:"total"`
}

// Find runs POST /api/v1/search/find.
func (c *Client) Find(ctx context.Context, req FindRequest) (FindResult, error) {
	var out FindResult
	if strings.TrimSpace(req.Query) == "" {
		return out, fmt.Errorf("%w: find: empty query", ErrInvalidArgument)
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/search/find", nil, req, &out)
	return out, err
}

// CreateSession runs POST /api/v1/sessions and returns the new session's
// id.
func (c *Client) CreateSession(ctx context.Context) (string, error) {
	var out struct {
		SessionID string `json:"session_id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/sessions", nil, struct{}{}, &out); err != nil {
		return "", err
	}
	if out.SessionID == "" {
		return "", fmt.Errorf("%w: sessions: no session_id", ErrMalformed)
	}
	return out.SessionID, nil
}

// AddMessage runs POST /api/v1/sessions/{id}/messages with a text message
// (role "user" or "assistant").
func (c *Client) AddMessage(ctx context.Context, session, role, content string) error {
	if role != "user" && role != "assistant" {
		return fmt.Errorf("%w: add message: role %q: want user or assistant", ErrInvalidArgument, role)
	}
	return c.do(ctx, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(session)+"/messages", nil,
		map[string]string{"role": role, "content": content}, nil)
}

// Commit is what committing a session returned: the archive is written
// (phase 1) and the task extracts memories in the background (phase 2).
type Commit struct {
	TaskID     string `json:"task_id"`
	Status     string `json:"status"` // "accepted", or another state like "skipped"
	ArchiveURI string `json:"archive_uri"`
	Archived   bool   `json:"archived"`
	TraceID    string `json:"trace_id,omitempty"`
}

// CommitSession runs POST /api/v1/sessions/{id}/commit.
func (c *Client) CommitSession(ctx context.Context, session string) (Commit, error) {
	var out Commit
	err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(session)+"/commit", nil, struct{}{}, &out)
	return out, err
}

// Task states.
const (
	TaskPending   = "pending"
	TaskRunning   = "running"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
)

// Task is a background task's state.
type Task struct {
	TaskID   string          `json:"task_id"`
	TaskType string          `json:"task_type"`
	Status   string          `json:"status"`
	Result   json.RawMessage `json:"result,omitempty"` // set once completed
	Error    string          `json:"error,omitempty"`
}

// Done reports whether the task has finished, either way.
func (t Task) Done() bool { return t.Status == TaskCompleted || t.Status == TaskFailed }

// GetTask runs GET /api/v1/tasks/{id}.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var out Task
	err := c.do(ctx, http.MethodGet, "/api/v1/tasks/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// ErrTaskTimeout is returned by WaitTask when the task has not finished
// in time; the task may still finish later.
var ErrTaskTimeout = errors.New("openviking: task did not finish in time")

// WaitTask polls a task every interval until it finishes or ctx is done
// (then ErrTaskTimeout, with the last state seen).
func (c *Client) WaitTask(ctx context.Context, id string, interval time.Duration) (Task, error) {
	var last Task
	for {
		t, err := c.GetTask(ctx, id)
		if err != nil && ctx.Err() == nil {
			return last, err
		}
		if err == nil {
			if last = t; t.Done() {
				return t, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("%w: task %s is %s", ErrTaskTimeout, id, last.Status)
		case <-time.After(interval):
		}
	}
}
