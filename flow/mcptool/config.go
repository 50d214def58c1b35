package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/secret"
)

// Server describes an MCP server: one entry of the config file's
// "mcp_servers". A stdio server has a Command; an HTTP one a URL.
type Server struct {
	// Command is the program, looked up in PATH when it has no slash.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env is added to the few variables a server inherits (see the package
	// documentation) and wins over them.
	Env map[string]string `json:"env,omitempty"`
	// SecretEnv names the Env entries that hold credentials, so their
	// values are redacted from the log (see package secret). Entries whose
	// names look like credentials (secret.LooksSecret) are redacted too.
	SecretEnv []string `json:"secret_env,omitempty"`
	// Cwd is the server's working directory. Empty means rath's; in a
	// config file, a relative Cwd is relative to the file's directory.
	Cwd string `json:"cwd,omitempty"`
	// Type is the transport: "stdio" ([TransportStdio]), "http"
	// ([TransportHTTP], streamable HTTP) or "sse" ([TransportSSE], the
	// older HTTP+SSE transport). Empty means stdio with a Command, http
	// with a URL.
	Type string `json:"type,omitempty"`
	// URL is the endpoint of an HTTP server (http or https).
	URL string `json:"url,omitempty"`
	// Headers are sent with every HTTP request. ${VAR} in a value is
	// replaced by the environment variable VAR when connecting, so a
	// token need not be written in the file; see HeaderSecrets.
	Headers map[string]string `json:"headers,omitempty"`
	// HeadersEnv maps a header to the environment variable holding its
	// whole value ("Authorization": "MY_TOKEN" sends $MY_TOKEN).
	HeadersEnv map[string]string `json:"headers_env,omitempty"`
	// CallTimeout bounds each tool call to this server ("30s"); empty
	// means Options.CallTimeout, else flow's default.
	CallTimeout string `json:"call_timeout,omitempty"`
	// ListTimeout bounds connecting to this server (its start and the
	// initialize handshake) and each listing of its tools ("10s"); empty
	// means CallTimeout if set, else Options.ListTimeout, else
	// DefaultListTimeout.
	ListTimeout string `json:"list_timeout,omitempty"`
	// MaxResultBytes caps one result's text, and separately its binary
	// parts; zero means Options.MaxResultBytes, negative no cap.
	MaxResultBytes int `json:"max_result_bytes,omitempty"`
}

// InheritedEnv returns the variables a server process gets from rath's
// environment when they are set.
func InheritedEnv() []string {
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}
}

// ParseServer decodes one config entry, rejecting unknown fields (a typo
// such as "argv" would otherwise start the server without its arguments).
func ParseServer(raw json.RawMessage) (Server, error) {
	var srv Server
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&srv); err != nil {
		return srv, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return srv, srv.validate()
}

func (srv Server) validate() error {
	if _, err := srv.timeout(); err != nil {
		return err
	}
	if _, err := srv.listTimeout(); err != nil {
		return err
	}
	switch srv.transport() {
	case TransportStdio:
		if srv.Command == "" {
			return fmt.Errorf("%w: no command", ErrConfig)
		}
		if srv.URL != "" || len(srv.Headers)+len(srv.HeadersEnv) > 0 {
			return fmt.Errorf("%w: a stdio server has no url or headers", ErrConfig)
		}
	case TransportHTTP, TransportSSE:
		if srv.Command != "" || len(srv.Args) > 0 {
			return fmt.Errorf("%w: an HTTP server has a url, not a command", ErrConfig)
		}
		u, err := url.Parse(srv.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: url %q: want http:// or https://", ErrConfig, srv.URL)
		}
	default:
		return fmt.Errorf("%w: transport %q is not supported (want stdio, http or sse)", ErrConfig, srv.Type)
	}
	return nil
}

// Transports a Server may name.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// transport is Type with its default filled in.
func (srv Server) transport() string {
	switch {
	case srv.Type == "streamable-http" || srv.Type == "streamableHttp":
		return TransportHTTP
	case srv.Type != "":
		return srv.Type
	case srv.URL != "":
		return TransportHTTP
	}
	return TransportStdio
}

func (srv Server) timeout() (time.Duration, error) { return duration("call_timeout", srv.CallTimeout) }

// listTimeout is ListTimeout, else CallTimeout; zero when neither is set.
func (srv Server) listTimeout() (time.Duration, error) {
	if srv.ListTimeout == "" {
		return srv.timeout()
	}
	return duration("list_timeout", srv.ListTimeout)
}

// duration parses the setting key's value v; empty is zero.
func duration(key, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %s %q: want a positive duration such as 30s", ErrConfig, key, v)
	}
	return d, nil
}

// command builds the server's process, with its small environment.
func (srv Server) command() *exec.Cmd {
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Dir = srv.Cwd
	env := map[string]string{}
	for _, k := range InheritedEnv() {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, srv.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	return cmd
}

// ConfigSecrets returns the secret Env values of the config file's MCP
// servers: those listed in secret_env and those whose names look like
// credentials. Entries that do not parse add nothing.
func ConfigSecrets(cf flow.ConfigFile) []secret.Secret {
	var out []secret.Secret
	for _, name := range slices.Sorted(maps.Keys(cf.MCPServers)) {
		srv, err := ParseServer(cf.MCPServers[name])
		if err != nil {
			continue
		}
		out = append(out, srv.Secrets(name, os.Getenv)...)
	}
	return out
}

// Secrets returns the values of srv that must not reach the log: its
// secret Env entries (see SecretEnv), the passwords of connection strings
// in its Env, Args and URL (secret.FromDSN), and its header values that come from
// the environment (HeadersEnv, ${VAR}) or whose header names a credential
// (Authorization, or a name secret.LooksSecret accepts).
func (srv Server) Secrets(name string, getenv func(string) string) []secret.Secret {
	var out []secret.Secret
	for _, k := range slices.Sorted(maps.Keys(srv.Env)) {
		if slices.Contains(srv.SecretEnv, k) || secret.LooksSecret(k) {
			out = append(out, secret.Secret{Name: "mcp." + name + "." + k, Value: srv.Env[k]})
		} else {
			out = append(out, secret.FromDSN("mcp."+name+"."+k, srv.Env[k])...)
		}
	}
	// A database server takes its connection string as an argument or
	// URL; the password in it is the server's credential.
	for i, a := range srv.Args {
		out = append(out, secret.FromDSN(fmt.Sprintf("mcp.%s.arg%d", name, i), a)...)
	}
	out = append(out, secret.FromDSN("mcp."+name+".url", srv.URL)...)
	for _, h := range slices.Sorted(maps.Keys(srv.HeadersEnv)) {
		out = append(out, secret.Secret{Name: "mcp." + name + ".header." + h, Value: getenv(srv.HeadersEnv[h])})
	}
	for _, h := range slices.Sorted(maps.Keys(srv.Headers)) {
		v := srv.Headers[h]
		if strings.EqualFold(h, "Authorization") || secret.LooksSecret(h) {
			out = append(out, secret.Secret{Name: "mcp." + name + ".header." + h, Value: expand(v, getenv)})
			continue
		}
		for _, ref := range envRefs.FindAllStringSubmatch(v, -1) {
			out = append(out, secret.Secret{Name: "mcp." + name + ".header." + h + "." + ref[1], Value: getenv(ref[1])})
		}
	}
	return slices.DeleteFunc(out, func(s secret.Secret) bool { return s.Value == "" })
}

// ConnectServer starts srv as the server name; see Connect.
func (m *Manager) ConnectServer(ctx context.Context, name string, srv Server) error {
	if err := srv.validate(); err != nil {
		return fmt.Errorf("server %s: %w", name, err)
	}
	d, _ := srv.timeout()
	ld, _ := srv.listTimeout()
	lim := limits{timeout: d, list: ld, maxResult: srv.MaxResultBytes}
	if srv.transport() != TransportStdio {
		return m.connectHTTP(ctx, name, srv, lim)
	}
	cmd := srv.command()
	if err := m.check(name); err != nil {
		return err
	}
	return m.start(ctx, name, cmd, specOf(cmd), nil, lim)
}

// LoadServers returns the "mcp_servers" of the config file at path
// (empty means flow.DefaultConfigPath: $RATH_HOME/config.json, else
// ~/.rath/config.json), with relative Cwds made relative to the file's
// directory. A missing file has none. Entries that do not parse come back
// as errors, joined, each naming its server; the others are returned.
func LoadServers(path string) (map[string]Server, error) {
	if path == "" {
		path = flow.DefaultConfigPath(os.Getenv)
	}
	cf, err := flow.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("mcptool: %w", err)
	}
	out := map[string]Server{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cf.MCPServers)) {
		srv, err := ParseServer(cf.MCPServers[name])
		if err == nil {
			err = checkServerName(name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s in %s: %w", name, path, err))
			continue
		}
		if srv.Cwd != "" && !filepath.IsAbs(srv.Cwd) {
			srv.Cwd = filepath.Join(filepath.Dir(path), srv.Cwd)
		}
		out[name] = srv
	}
	return out, errors.Join(errs...)
}

// ConnectConfig connects every server in the "mcp_servers" of the config
// file at path (see LoadServers), in name order. A missing file connects
// nothing. A server that fails does not stop the others: the failures come
// back joined, each naming its server; Servers lists those connected.
func (m *Manager) ConnectConfig(ctx context.Context, path string) error {
	if path == "" {
		path = flow.DefaultConfigPath(os.Getenv)
	}
	servers, err := LoadServers(path)
	errs := []error{err}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := m.ConnectServer(ctx, name, servers[name]); err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s in %s: %w", name, path, err))
		}
	}
	return errors.Join(errs...)
}
