package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/httporigin"
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

// originGuard adds the server's configured headers to each request, and
// sends only to the configured origin (scheme, host, port): the headers
// carry credentials, and the SDK's transports would otherwise follow a
// redirect, or an SSE endpoint event, wherever the server points them.
// A request elsewhere is refused and remembered, so a failed connect can
// say why.
type originGuard struct {
	base    http.RoundTripper
	header  http.Header
	origin  string
	server  string
	refused atomic.Pointer[CrossOriginError]
}

func newOriginGuard(base http.RoundTripper, server string, header http.Header) *originGuard {
	g := &originGuard{base: base, header: header, server: server}
	if u, err := url.Parse(server); err == nil {
		g.origin, g.server = httporigin.Of(u), u.Redacted()
	}
	return g
}

// check refuses a request to another origin than the server's.
func (g *originGuard) check(u *url.URL) error {
	if g.origin != "" && httporigin.Of(u) == g.origin {
		return nil
	}
	e := &CrossOriginError{Server: g.server, URL: u.Redacted()}
	g.refused.CompareAndSwap(nil, e)
	return e
}

func (g *originGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := g.check(r.URL); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	r = r.Clone(r.Context())
	for k, v := range g.header {
		r.Header[k] = v
	}
	resp, err := g.base.RoundTrip(r)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err // an event stream: the SDK bounds each event
	}
	// The SDK reads a JSON response whole: bound it, or a server that
	// never ends its answer exhausts the memory.
	resp.Body = &boundedBody{rc: resp.Body, left: maxHTTPMessage, server: g.server}
	return resp, nil
}

// maxHTTPMessage bounds one JSON response of an HTTP MCP server, as the
// SDK bounds one event of a stream.
const maxHTTPMessage = mcp.DefaultMaxEventSize

// boundedBody fails a read past its bound. (The SDK reports a read error
// in its own words, so the error is not typed: it reaches the caller as
// text inside a ServerGoneError.)
type boundedBody struct {
	rc     io.ReadCloser
	left   int64
	server string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("mcptool: a response of %s is longer than %d bytes: not read further", b.server, maxHTTPMessage)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// checkRedirect refuses a redirect to another origin before it is
// followed; the transport would refuse it too, this says it sooner.
func (g *originGuard) checkRedirect(r *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("mcptool: stopped after 10 redirects")
	}
	return g.check(r.URL)
}

// httpTransport builds a fresh SDK transport for srv: one per connection,
// since a transport holds its session.
func (srv Server) httpTransport() (mcp.Transport, *originGuard) {
	g := newOriginGuard(http.DefaultTransport, srv.URL, srv.header(os.Getenv))
	hc := &http.Client{Transport: g, CheckRedirect: g.checkRedirect}
	if srv.transport() == TransportSSE {
		return &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: hc}, g
	}
	// A server restarted forgets its sessions; the SDK's own retries of
	// the event stream would only delay noticing that. Manager reconnects.
	return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}, g
}

// connectHTTP connects srv, a streamable HTTP or SSE server, as name.
func (m *Manager) connectHTTP(ctx context.Context, name string, srv Server, lim limits) error {
	if err := m.check(name); err != nil {
		return err
	}
	srv.Headers, srv.HeadersEnv = maps.Clone(srv.Headers), maps.Clone(srv.HeadersEnv)
	var redial func(context.Context, *conn) error
	redial = func(ctx context.Context, old *conn) error {
		t, g := srv.httpTransport()
		err := m.connect(ctx, name, t, nil, redial, old, lim)
		// The SDK reports a refused request in its own words; the
		// guard knows what it refused.
		if ce := g.refused.Load(); err != nil && ce != nil && !errors.Is(err, ErrCrossOrigin) {
			err = fmt.Errorf("mcptool: connect %s: %w (%v)", name, ce, err)
		}
		return err
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
