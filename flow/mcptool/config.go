package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/secret"
)

// Server describes a stdio MCP server: one entry of the config file's
// "mcp_servers".
type Server struct {
	// Command is the program, looked up in PATH when it has no slash.
	Command string   `json:"command"`
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
	// Type is the transport: "stdio" or empty, the only one supported.
	Type string `json:"type,omitempty"`
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
	if srv.Command == "" {
		return fmt.Errorf("%w: no command", ErrConfig)
	}
	if srv.Type != "" && srv.Type != "stdio" {
		return fmt.Errorf("%w: transport %q is not supported (only stdio)", ErrConfig, srv.Type)
	}
	return nil
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
		for _, k := range slices.Sorted(maps.Keys(srv.Env)) {
			if slices.Contains(srv.SecretEnv, k) || secret.LooksSecret(k) {
				out = append(out, secret.Secret{Name: "mcp." + name + "." + k, Value: srv.Env[k]})
			}
		}
	}
	return out
}

// ConnectServer starts srv as the server name; see Connect.
func (m *Manager) ConnectServer(ctx context.Context, name string, srv Server) error {
	if err := srv.validate(); err != nil {
		return fmt.Errorf("server %s: %w", name, err)
	}
	return m.Connect(ctx, name, srv.command())
}

// ConnectConfig connects every server in the "mcp_servers" of the config
// file at path (empty means flow.DefaultConfigPath: $RATH_HOME/config.json,
// else ~/.rath/config.json), in name order. A missing file connects
// nothing. A server that fails does not stop the others: the failures come
// back joined, each naming its server; Servers lists those connected.
func (m *Manager) ConnectConfig(ctx context.Context, path string) error {
	if path == "" {
		path = flow.DefaultConfigPath(os.Getenv)
	}
	cf, err := flow.LoadConfig(path)
	if err != nil {
		return fmt.Errorf("mcptool: %w", err)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cf.MCPServers)) {
		srv, err := ParseServer(cf.MCPServers[name])
		if err == nil {
			if srv.Cwd != "" && !filepath.IsAbs(srv.Cwd) {
				srv.Cwd = filepath.Join(filepath.Dir(path), srv.Cwd)
			}
			err = m.ConnectServer(ctx, name, srv)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s in %s: %w", name, path, err))
		}
	}
	return errors.Join(errs...)
}
