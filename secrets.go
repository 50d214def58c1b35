package rath

import (
	"os"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/secret"
)

// DefaultSecrets returns what a runtime redacts when Options.Secrets is
// nil: the hash chain's key, the environment variables whose names say
// they hold credentials (secret.LooksSecret; the local backend's commands
// can read rath's environment through /proc), the OpenTelemetry
// exporter's headers (secret.FromOTLPHeaders) and the passwords in the
// connection strings of the others (RATH_DSN; secret.FromDSN), and the
// provider keys, secret MCP server variables and connection-string
// passwords of the config file ($RATH_HOME/config.json
// or ~/.rath/config.json; an unreadable file adds nothing here and is
// reported when a provider is resolved).
func DefaultSecrets(hmacKey []byte) []secret.Secret {
	var out []secret.Secret
	if len(hmacKey) > 0 {
		out = append(out, secret.Secret{Name: "RATH_HMAC_KEY", Value: string(hmacKey)})
	}
	out = append(out, secret.FromEnviron(os.Environ())...)
	path := flow.DefaultConfigPath(os.Getenv)
	if cf, err := flow.LoadConfig(path); err == nil {
		out = append(out, flow.ConfigSecrets(cf, os.Getenv)...)
		out = append(out, mcptool.ConfigSecrets(cf)...)
	}
	return out
}
