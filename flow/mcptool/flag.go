package mcptool

import (
	"fmt"
	"strings"
)

// ParseFlag reads a server given on a command line, as rath's --mcp flag
// takes it: NAME=URL for an HTTP server (http:// or https://, streamable
// HTTP; sse+http:// or sse+https:// for the older SSE transport) and
// NAME=COMMAND ARGS… for a stdio one, the command line split at spaces
// (no quoting: a server needing spaces in an argument belongs in the
// config file).
func ParseFlag(s string) (string, Server, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(spec) == "" {
		return "", Server{}, fmt.Errorf("%w: %q: want NAME=URL or NAME=COMMAND ARGS…", ErrConfig, s)
	}
	name = strings.TrimSpace(name)
	if err := checkServerName(name); err != nil {
		return "", Server{}, err
	}
	spec = strings.TrimSpace(spec)
	var srv Server
	switch {
	case strings.HasPrefix(spec, "sse+http://"), strings.HasPrefix(spec, "sse+https://"):
		srv = Server{Type: TransportSSE, URL: strings.TrimPrefix(spec, "sse+")}
	case strings.HasPrefix(spec, "http://"), strings.HasPrefix(spec, "https://"):
		srv = Server{Type: TransportHTTP, URL: spec}
	default:
		f := strings.Fields(spec)
		srv = Server{Command: f[0], Args: f[1:]}
	}
	if err := srv.validate(); err != nil {
		return "", Server{}, fmt.Errorf("--mcp %s: %w", name, err)
	}
	return name, srv, nil
}
