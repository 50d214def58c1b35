package cli

import (
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/spf13/cobra"
)

// mcpFlagServers parses the --mcp flags (rath.AgentSpec.MCP); nil for
// none.
func mcpFlagServers(cmd *cobra.Command, flags []string) (map[string]mcptool.Server, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	servers := map[string]mcptool.Server{}
	for _, f := range flags {
		name, srv, err := mcptool.ParseFlag(f)
		if err != nil {
			return nil, usagef(cmd, "--mcp: %v", err)
		}
		if _, dup := servers[name]; dup {
			return nil, usagef(cmd, "--mcp: server %s given twice", name)
		}
		servers[name] = srv
	}
	return servers, nil
}

// parseTools checks a --tools list (rath.ParseTools); empty selects every
// MCP tool and no built-in.
func parseTools(list string) (rath.ToolSelection, error) {
	var names []string
	if list != "" {
		names = strings.Split(list, ",")
	}
	return rath.ParseTools(names)
}
