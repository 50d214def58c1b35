package mcptool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow"
)

// envRefs matches ${VAR} in a header value.
var envRefs = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces each ${VAR} in v by getenv(VAR).
func expand(v string, getenv func(string) string) string {
	return envRefs.ReplaceAllStringFunc(v, func(ref string) string {
		return getenv(envRefs.FindStringSubmatch(ref)[1])
	})
}

// header returns the headers srv sends, read from the environment now.
func (srv Server) header(getenv func(string) string) http.Header {
	h := http.Header{}
	for k, v := range srv.Headers {
		h.Set(k, expand(v, getenv))
	}
	for k, env := range srv.HeadersEnv {
		h.Set(k, getenv(env))
	}
	return h
}

// withHeaders adds fixed headers to every request; the SDK's transports
// take an *http.Client, not headers.
type withHeaders struct {
	base   http.RoundTripper
	header http.Header
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.header {
		r.Header[k] = v
	}
	return w.base.RoundTrip(r)
}

// httpTransport builds a fresh SDK transport for srv: one per connection,
// since a transport holds its session.
func (srv Server) httpTransport() mcp.Transport {
	hc := &http.Client{Transport: withHeaders{base: http.DefaultTransport, header: srv.header(os.Getenv)}}
	if srv.transport() == TransportSSE {
		return &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: hc}
	}
	// A server restarted forgets its sessions; the SDK's own retries of
	// the event stream would only delay noticing that. Manager reconnects.
	return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}
}

// connectHTTP connects srv, a streamable HTTP or SSE server, as name.
func (m *Manager) connectHTTP(ctx context.Context, name string, srv Server, lim limits) error {
	if err := m.check(name); err != nil {
		return err
	}
	srv.Headers, srv.HeadersEnv = maps.Clone(srv.Headers), maps.Clone(srv.HeadersEnv)
	var redial func(context.Context, *conn) error
	redial = func(ctx context.Context, old *conn) error {
		return m.connect(ctx, name, srv.httpTransport(), nil, redial, old, lim)
	}
	return redial(ctx, nil)
}

// codeRejected is the JSON-RPC code the SDK gives a request its
// transport could not deliver (the HTTP request failed before reaching
// the server, or the connection was closing).
const codeRejected = -32005

// notSent reports a call that failed before the server could have read it:
// the connection was refused, or an HTTP server (restarted) no longer knew
// the session, which it checks before running anything.
func notSent(err error) bool {
	var oe *net.OpError
	var we *jsonrpc.Error
	if errors.As(err, &oe) && oe.Op == "dial" || errors.As(err, &we) && we.Code == codeRejected || errors.Is(err, mcp.ErrSessionMissing) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "session not found") ||
		strings.Contains(msg, "404 Not Found")
}

// broken reports a call that failed because the connection did.
func broken(err error, c *conn) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || notSent(err) || c.gone()
}

// reconnect replaces c, whose server is gone, by a new connection.
func (m *Manager) reconnect(ctx context.Context, c *conn) (*conn, error) {
	if err := c.redial(ctx, c); err != nil && !errors.Is(err, ErrAlreadyConnected) { // already: a concurrent call did it
		ge := c.goneError()
		if ge.Err == nil {
			ge.Err = err
		} else {
			ge.Err = fmt.Errorf("%w; reconnecting failed: %w", ge.Err, err)
		}
		return nil, &flow.ToolError{Kind: KindServerGone, Err: ge}
	}
	nc, err := m.conn(c.name)
	if err != nil {
		return nil, &flow.ToolError{Kind: KindServerGone, Err: err}
	}
	return nc, nil
}
