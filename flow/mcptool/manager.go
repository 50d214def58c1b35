package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTerminateDuration is how long Close waits for a server to exit
// after closing its stdin before sending SIGTERM. Short, because some
// servers (the reference "everything" server among them) never exit on
// EOF and every Close would otherwise wait the SDK's default 5 s.
const DefaultTerminateDuration = time.Second

// Options configure a Manager. The zero value is ready to use.
type Options struct {
	// BareNames names tools as the server does (sanitized) instead of
	// server__tool. Tools of two servers, or an MCP tool and a built-in,
	// may then collide; flow.WithTools rejects duplicates.
	BareNames bool
	// Stderr receives the servers' stderr (their logs) as well. Nil keeps
	// only the last 2 KiB per server, for error messages.
	Stderr io.Writer
	// TerminateDuration: see DefaultTerminateDuration, the value for zero.
	TerminateDuration time.Duration
	// Client is how rath introduces itself to servers. Nil means
	// {Name: "rath", Version: "dev"}.
	Client *mcp.Implementation
	// MaxResultBytes caps the text of one tool result, and separately the
	// binary parts kept with it; the rest is dropped and the result says
	// so. Zero means DefaultMaxResultBytes; negative, no cap.
	MaxResultBytes int
	// PingTimeout bounds the health check made before the next call to a
	// server after a call to it timed out. Zero means DefaultPingTimeout.
	PingTimeout time.Duration
	// CallTimeout, if positive, is the timeout of every MCP tool call
	// (flow.TimeoutTool); zero leaves flow.DefaultToolTimeout.
	CallTimeout time.Duration
	// ListTimeout bounds connecting to a server (its start and the
	// initialize handshake) and each listing of its tools, for servers
	// with no list_timeout or call_timeout of their own. Zero means
	// DefaultListTimeout.
	ListTimeout time.Duration
}

// Defaults for Options fields left zero.
const (
	// DefaultMaxResultBytes is the default cap of one tool result.
	DefaultMaxResultBytes = 1 << 20
	// DefaultPingTimeout is how long a server suspected of hanging has to
	// answer a ping before it is restarted (or, when it cannot be, given
	// up on).
	DefaultPingTimeout = 2 * time.Second
	// DefaultListTimeout is how long a server has to start, answer the
	// initialize handshake, and list its tools: a server that holds
	// either open would otherwise hang rath tools, a run and a worker's
	// slot for good.
	DefaultListTimeout = 30 * time.Second
)

// Manager holds one long-lived connection per MCP server. It is safe for
// concurrent use; calls to one server share its connection.
type Manager struct {
	opts   Options
	client *mcp.Client

	mu     sync.Mutex // protects following fields
	conns  map[string]*conn
	closed bool
}

// conn is one server's connection. done is closed when the connection has
// ended, by the server or by Close; err is why (nil for a clean end).
type conn struct {
	name    string
	session *mcp.ClientSession
	stderr  *tail // nil when not captured (ConnectTransport)
	// redial connects the server again in place of this connection
	// (restarting a stdio server's process); nil for ConnectTransport.
	redial func(ctx context.Context, old *conn) error
	lim    limits
	done   chan struct{}
	err    error

	// suspect is set when a call timed out: the next call pings first.
	suspect atomic.Bool
	// hung is set when a suspect server did not answer the ping and could
	// not be restarted: calls fail at once until it is connected again.
	hung atomic.Bool
	// calls are the tool calls in flight, which an elicitation belongs to.
	calls calls
}

// limits are a server's own settings (Server.CallTimeout and
// MaxResultBytes); zero values defer to Options.
type limits struct {
	timeout   time.Duration
	list      time.Duration // connecting and listing tools; zero: Options.ListTimeout
	maxResult int
}

// listTimeout is how long connecting to, or listing the tools of, a
// server with limits lim may take.
func (m *Manager) listTimeout(lim limits) time.Duration {
	if lim.list > 0 {
		return lim.list
	}
	return m.opts.ListTimeout
}

// cmdSpec is what starting a server's process again needs: an exec.Cmd
// runs once.
type cmdSpec struct {
	path       string
	args, env  []string
	dir        string
	stderr     io.Writer
	waitDelay  time.Duration
	sysProcAtt *syscall.SysProcAttr
}

func specOf(cmd *exec.Cmd) *cmdSpec {
	return &cmdSpec{path: cmd.Path, args: slices.Clone(cmd.Args), env: slices.Clone(cmd.Env), dir: cmd.Dir,
		stderr: cmd.Stderr, waitDelay: cmd.WaitDelay, sysProcAtt: cmd.SysProcAttr}
}

func (s *cmdSpec) command() *exec.Cmd {
	return &exec.Cmd{Path: s.path, Args: slices.Clone(s.args), Env: slices.Clone(s.env), Dir: s.dir,
		Stderr: s.stderr, WaitDelay: s.waitDelay, SysProcAttr: s.sysProcAtt}
}

func (c *conn) alive() bool {
	if c.hung.Load() {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// gone reports whether the connection has ended, waiting a moment: a call
// can fail on a dying server's broken pipe just before the connection
// notices the end of its output.
func (c *conn) gone() bool {
	select {
	case <-c.done:
		return true
	case <-time.After(goneGrace):
		return false
	}
}

// goneGrace is how long gone waits; a process exit reaches the reader in
// far less.
const goneGrace = 200 * time.Millisecond

func (c *conn) goneError() *ServerGoneError {
	e := &ServerGoneError{Server: c.name, Stderr: c.stderr.String()}
	if !c.alive() {
		e.Err = c.err
	}
	return e
}

// NewManager returns a manager with no connections and default Options.
func NewManager() *Manager { return NewManagerWith(Options{}) }

// NewManagerWith returns a manager with options.
func NewManagerWith(opts Options) *Manager {
	if opts.TerminateDuration <= 0 {
		opts.TerminateDuration = DefaultTerminateDuration
	}
	if opts.MaxResultBytes == 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = DefaultPingTimeout
	}
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = DefaultListTimeout
	}
	impl := opts.Client
	if impl == nil {
		impl = &mcp.Implementation{Name: "rath", Version: "dev"}
	}
	m := &Manager{opts: opts, conns: map[string]*conn{}}
	m.client = mcp.NewClient(impl, &mcp.ClientOptions{ElicitationHandler: m.elicit})
	return m
}

// Connect starts cmd (not started yet) as the server name and initializes
// an MCP session with it over its stdin and stdout. ctx bounds the
// start-up only: the server runs until Close. cmd's stderr is kept (its
// end goes into error messages) and also sent to cmd.Stderr or
// Options.Stderr when set.
//
// A name whose server is gone may be connected again; its tools, from
// earlier Tools calls, then use the new connection.
//
// Errors: ErrInvalidName, ErrAlreadyConnected, ErrClosed, or the start-up
// failure with the server's stderr.
func (m *Manager) Connect(ctx context.Context, name string, cmd *exec.Cmd) error {
	if cmd == nil {
		return fmt.Errorf("%w: %s: no command", ErrConfig, name)
	}
	if err := m.check(name); err != nil {
		return err
	}
	return m.start(ctx, name, cmd, specOf(cmd), nil, limits{})
}

// start connects cmd as name, replacing old (nil: nothing to replace).
func (m *Manager) start(ctx context.Context, name string, cmd *exec.Cmd, spec *cmdSpec, old *conn, lim limits) error {
	t := &tail{max: stderrTail}
	switch {
	case cmd.Stderr != nil:
		cmd.Stderr = io.MultiWriter(cmd.Stderr, t)
	case m.opts.Stderr != nil:
		cmd.Stderr = io.MultiWriter(m.opts.Stderr, t)
	default:
		cmd.Stderr = t
	}
	if cmd.WaitDelay == 0 {
		// A server's child that inherited stderr would otherwise keep
		// Wait, and so Close, blocked on the copy.
		cmd.WaitDelay = m.opts.TerminateDuration
	}
	redial := func(ctx context.Context, old *conn) error {
		return m.start(ctx, name, spec.command(), spec, old, lim)
	}
	err := m.connect(ctx, name, &mcp.CommandTransport{Command: cmd, TerminateDuration: m.opts.TerminateDuration}, t, redial, old, lim)
	if err != nil && t.String() != "" {
		return fmt.Errorf("%w; its stderr ended with:\n%s", err, t.String())
	}
	return err
}

// ConnectTransport connects the server name over any SDK transport (an
// in-memory one in tests, a streamable HTTP one). Its stderr, if any, is
// not captured.
func (m *Manager) ConnectTransport(ctx context.Context, name string, t mcp.Transport) error {
	if err := m.check(name); err != nil {
		return err
	}
	return m.connect(ctx, name, t, nil, nil, nil, limits{})
}

// check rejects a bad name or one already connected; connect checks the
// latter again once connected, for a concurrent Connect of the same name.
func (m *Manager) check(name string) error {
	if err := checkServerName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if c, ok := m.conns[name]; ok && c.alive() {
		return fmt.Errorf("%w: %s", ErrAlreadyConnected, name)
	}
	return nil
}

func (m *Manager) connect(ctx context.Context, name string, t mcp.Transport, stderr *tail, redial func(context.Context, *conn) error, replace *conn, lim limits) error {
	// The bound is on the handshake only: an SSE transport keeps the
	// connect context for its event stream, so a connected session's
	// context is never cancelled here (it lives as ctx does).
	d := m.listTimeout(lim)
	cctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(d, cancel)
	cs, err := m.client.Connect(cctx, t, nil)
	if err != nil {
		timedOut := !timer.Stop() && ctx.Err() == nil
		cancel()
		if timedOut {
			return &ListTimeoutError{Server: name, Op: "connect", After: d}
		}
		return fmt.Errorf("mcptool: connect %s: %w", name, err)
	}
	if !timer.Stop() {
		// The bound passed as the handshake ended: the session may hold a
		// cancelled context, so it is not kept.
		cs.Close()
		return &ListTimeoutError{Server: name, Op: "connect", After: d}
	}
	c := &conn{name: name, session: cs, stderr: stderr, redial: redial, lim: lim, done: make(chan struct{})}
	go func() {
		c.err = cs.Wait()
		close(c.done)
	}()
	m.mu.Lock()
	old, exists := m.conns[name]
	switch {
	case m.closed:
		m.mu.Unlock()
		closeConn(c)
		return ErrClosed
	case exists && old != replace && old.alive():
		m.mu.Unlock()
		closeConn(c)
		return fmt.Errorf("%w: %s", ErrAlreadyConnected, name)
	}
	m.conns[name] = c
	m.mu.Unlock()
	switch {
	case exists && (old == replace || old.hung.Load()):
		// A hung server takes TerminateDuration twice to stop; the
		// caller, who is waiting for the new one, does not wait for that.
		go closeConn(old)
	case exists:
		closeConn(old) // gone already: this only reaps the process
	}
	return nil
}

// conn returns the named server's connection, alive or gone.
func (m *Manager) conn(name string) (*conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	c, ok := m.conns[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (connected: %v)", ErrUnknownServer, name, slices.Sorted(maps.Keys(m.conns)))
	}
	return c, nil
}

// Servers returns the names of the connected servers, sorted, including
// those whose server has gone.
func (m *Manager) Servers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.conns))
}

// Server returns what the server said about itself when the connection
// was initialized.
func (m *Manager) Server(name string) (*mcp.InitializeResult, error) {
	c, err := m.conn(name)
	if err != nil {
		return nil, err
	}
	return c.session.InitializeResult(), nil
}

// Close closes every connection, concurrently: each server's stdin is
// closed, and a server still running after TerminateDuration gets SIGTERM,
// then SIGKILL. The SIGTERM exit is the normal end of servers that ignore
// EOF and is not an error, nor is the end of a server already gone. Later
// calls fail with ErrClosed; a second Close returns nil.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	conns := m.conns
	m.conns = nil
	m.mu.Unlock()

	names := slices.Sorted(maps.Keys(conns))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { errs[i] = closeConn(conns[name]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeConn closes one connection and reports a failure to stop a server
// that was still alive.
func closeConn(c *conn) error {
	// A server suspected of hanging may need SIGKILL: expected, not an error.
	wasAlive := c.alive() && !c.suspect.Load()
	err := c.session.Close()
	// ErrProcessDone: the server exited on EOF just after the SDK stopped
	// waiting, so its SIGTERM and SIGKILL found nothing to stop.
	// A *url.Error: the HTTP session's closing DELETE found the server
	// gone, which needs no cleanup.
	var ue *url.Error
	if err == nil || !wasAlive || terminated(err) || errors.Is(err, os.ErrProcessDone) || errors.As(err, &ue) {
		return nil
	}
	return fmt.Errorf("mcptool: close %s: %w", c.name, err)
}

// terminated reports the exit by SIGTERM that CommandTransport's Close
// causes for a server that does not exit on EOF (DEPENDENCY-NOTES §2f).
func terminated(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}
