package mcptool

import (
	"errors"
	"fmt"
	"time"
)

// Tool error kinds, recorded on tool_result chunks and tool.returned
// events like the kinds of package flow.
const (
	// KindError: the server answered the call with a JSON-RPC error
	// (unknown tool, invalid parameters, an internal error).
	KindError = "mcp_error"
	// KindToolError: the server ran the tool and reported a failure
	// (isError in the result).
	KindToolError = "mcp_tool_error"
	// KindServerGone: the server exited or closed the connection.
	KindServerGone = "mcp_server_gone"
	// KindServerHung: after a call timed out, the server did not answer a
	// ping and could not be restarted.
	KindServerHung = "mcp_server_unresponsive"
)

var (
	// ErrClosed is returned by calls on a closed Manager.
	ErrClosed = errors.New("mcptool: manager closed")
	// ErrUnknownServer is returned for a server name with no connection.
	ErrUnknownServer = errors.New("mcptool: no such server")
	// ErrAlreadyConnected is returned by Connect for a name whose
	// connection is alive.
	ErrAlreadyConnected = errors.New("mcptool: server already connected")
	// ErrInvalidName is returned for a server name that cannot prefix tool
	// names: it must match [A-Za-z0-9_-]{1,32}.
	ErrInvalidName = errors.New("mcptool: invalid server name")
	// ErrConfig is returned for an unusable server description or config
	// file entry.
	ErrConfig = errors.New("mcptool: invalid server config")
	// ErrServerGone is matched by a *ServerGoneError.
	ErrServerGone = errors.New("mcptool: server gone")
	// ErrCrossOrigin is matched by a *CrossOriginError.
	ErrCrossOrigin = errors.New("mcptool: request to another origin refused")
	// ErrUnresponsive is matched by an *UnresponsiveError.
	ErrUnresponsive = errors.New("mcptool: server not responding")
	// ErrListTimeout is matched by a *ListTimeoutError.
	ErrListTimeout = errors.New("mcptool: server did not connect or list its tools in time")
)

// ListTimeoutError reports a server that did not finish connecting (its
// start and the initialize handshake) or listing its tools within its
// listing bound (list_timeout, else call_timeout, else
// Options.ListTimeout).
type ListTimeoutError struct {
	Server string
	Op     string // "connect" or "list tools"
	After  time.Duration
}

func (e *ListTimeoutError) Error() string {
	return fmt.Sprintf("mcptool: server %s: %s did not finish in %s (raise list_timeout in its config entry if it is only slow)", e.Server, e.Op, e.After)
}

// Is makes errors.Is(err, ErrListTimeout) true.
func (e *ListTimeoutError) Is(target error) bool { return target == ErrListTimeout }

// UnresponsiveError reports a server that, after a call to it timed out,
// did not answer a ping, and that could not be restarted (Restart says
// why; nil for a connection Connect did not start, which has no command
// to run again).
type UnresponsiveError struct {
	Server  string
	Waited  string // how long the ping waited; empty once given up on
	Restart error
	Stderr  string
}

func (e *UnresponsiveError) Error() string {
	msg := fmt.Sprintf("mcptool: server %s is not responding after a call timed out", e.Server)
	if e.Waited != "" {
		msg += " (no answer to a ping in " + e.Waited + ")"
	}
	if e.Restart != nil {
		msg += "; restarting it failed: " + e.Restart.Error()
	} else {
		msg += "; reconnect it with Manager.Connect"
	}
	if e.Stderr != "" {
		msg += "; its stderr ended with:\n" + e.Stderr
	}
	return msg
}

func (e *UnresponsiveError) Unwrap() error { return e.Restart }

// Is makes errors.Is(err, ErrUnresponsive) true.
func (e *UnresponsiveError) Is(target error) bool { return target == ErrUnresponsive }

// ServerGoneError reports a server whose connection ended: it exited,
// crashed, or closed its stdout. Stderr holds the end of what it wrote
// there, if it was captured.
type ServerGoneError struct {
	Server string
	Err    error // why the connection ended, if known
	Stderr string
}

func (e *ServerGoneError) Error() string {
	msg := fmt.Sprintf("mcptool: server %s is gone (the connection closed", e.Server)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	msg += "); the next call reconnects (a server given to ConnectTransport must be connected again)"
	if e.Stderr != "" {
		msg += "; its stderr ended with:\n" + e.Stderr
	}
	return msg
}

func (e *ServerGoneError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrServerGone) true.
func (e *ServerGoneError) Is(target error) bool { return target == ErrServerGone }

// CallError reports a call the server answered with an error: a JSON-RPC
// error (Code non-zero) or a tool result marked isError (Code zero, the
// result's text in Message).
type CallError struct {
	Server, Tool string
	Code         int64
	Message      string
}

func (e *CallError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("mcptool: %s tool %s: server error %d: %s", e.Server, e.Tool, e.Code, e.Message)
	}
	return fmt.Sprintf("mcptool: %s tool %s failed: %s", e.Server, e.Tool, e.Message)
}

// CrossOriginError reports a request to an HTTP MCP server that would have
// gone to another origin (scheme, host, port) than the configured URL's:
// a redirect, or an SSE endpoint event, naming another host. It is not
// sent: the server's headers carry its credentials.
type CrossOriginError struct {
	Server string // the configured URL
	URL    string // where the request would have gone (no userinfo)
}

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("mcptool: refused a request to %s: not the origin of the configured server %s, and its credentials go nowhere else", e.URL, e.Server)
}

// Is makes errors.Is(err, ErrCrossOrigin) true.
func (e *CrossOriginError) Is(target error) bool { return target == ErrCrossOrigin }
