package cli

import (
	"encoding/json"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/spf13/cobra"
)

// paramMCP holds the --mcp servers (a worker starts them itself).
const paramMCP = rath.ParamMCP

// mcpFlagServers parses the --mcp flags into the "mcp" parameter.
func mcpFlagServers(cmd *cobra.Command, flags []string, params map[string]string) error {
	if len(flags) == 0 {
		return nil
	}
	servers := map[string]mcptool.Server{}
	for _, f := range flags {
		name, srv, err := mcptool.ParseFlag(f)
		if err != nil {
			return usagef(cmd, "--mcp: %v", err)
		}
		if _, dup := servers[name]; dup {
			return usagef(cmd, "--mcp: server %s given twice", name)
		}
		servers[name] = srv
	}
	b, err := json.Marshal(servers)
	if err != nil {
		return err
	}
	params[paramMCP] = string(b)
	return nil
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
