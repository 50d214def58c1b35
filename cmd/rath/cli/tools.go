package cli

import (
	"encoding/json"
	"fmt"
	"github.com/gorath/rath"
	"maps"
	"slices"
	"strings"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/sandbox"
	"github.com/spf13/cobra"
)

// toolView is one tool as `rath tools --json` prints it.
type toolView struct {
	Name        string               `json:"name"`
	Source      string               `json:"source"` // "builtin" or "mcp:SERVER"
	Select      string               `json:"select"` // how --tools names it
	Description string               `json:"description"`
	Schema      json.RawMessage      `json:"schema"`
	Annotations flow.ToolAnnotations `json:"annotations,omitzero"`
}

func newToolsCmd(a *app) *cobra.Command {
	var servers []string
	cmd := &cobra.Command{
		Use:   "tools [--mcp NAME=…]",
		Short: "List the tools a run can use: the built-ins and those of the MCP servers (config file and --mcp), with their schemas",
		Long: `tools connects to the MCP servers of the config file ($RATH_HOME/config.json,
"mcp_servers") and those given with --mcp, and lists every tool a run could
be given: the built-in ones, then each server's, with the name the model
sees, the name --tools selects it by, its description and its JSON Schema.
With --json it prints them as a JSON array.`,
		Example: `rath tools
rath tools --mcp everything="npx -y @modelcontextprotocol/server-everything" --json
rath tools --mcp remote=http://127.0.0.1:3001/mcp`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			brought, err := mcpFlagServers(cmd, servers)
			if err != nil {
				return err
			}
			// Built-ins are listed from a pool with no backend: listing
			// needs no sandbox, and no store is opened.
			pool := sandbox.NewPool(sandbox.NewRegistry())
			defer pool.Close()
			bt, err := builtin.New(pool)
			if err != nil {
				return err
			}
			var views []toolView
			for _, t := range bt {
				views = append(views, toolView{Name: t.Name(), Source: "builtin", Select: t.Name(), Description: t.Description(),
					Schema: t.Schema(), Annotations: flow.AnnotationsOf(t)})
			}
			all, err := rath.AgentServers(brought)
			if all == nil {
				return err
			}
			m := mcptool.NewManager()
			defer m.Close()
			var errs []string
			if err != nil {
				errs = append(errs, err.Error())
			}
			for _, name := range slices.Sorted(maps.Keys(all)) {
				if err := m.ConnectServer(ctx, name, all[name]); err != nil {
					errs = append(errs, fmt.Sprintf("mcp server %s: %v", name, err))
					continue
				}
				tools, err := m.Tools(ctx, name)
				if err != nil {
					errs = append(errs, fmt.Sprintf("mcp server %s: %v", name, err))
					continue
				}
				for _, t := range tools {
					s, _ := mcptool.SpecOf(t)
					views = append(views, toolView{Name: s.Name, Source: "mcp:" + name, Select: name + "." + s.Remote,
						Description: s.Description, Schema: s.Schema, Annotations: s.Annotations})
				}
			}
			if a.json {
				if err := a.printJSON(views); err != nil {
					return err
				}
			} else {
				tw := &termWriter{w: a.stdout} // descriptions come from servers: escape them
				for _, v := range views {
					fmt.Fprintf(tw, "%s  (%s, --tools %s)%s\n  %s\n  schema: %s\n", v.Name, v.Source, v.Select, hints(v.Annotations),
						strings.ReplaceAll(strings.TrimSpace(v.Description), "\n", "\n  "), v.Schema)
				}
				tw.Flush()
			}
			if len(errs) > 0 {
				return fmt.Errorf("%s", strings.Join(errs, "\n"))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&servers, "mcp", nil, "an MCP server: NAME=URL (streamable HTTP; sse+http://… for SSE) or NAME=COMMAND ARGS… (stdio); repeatable")
	jsonFlag(cmd, a)
	return cmd
}

// hints renders a tool's annotations briefly.
func hints(an flow.ToolAnnotations) string {
	var h []string
	if an.ReadOnly {
		h = append(h, "read-only")
	}
	if an.Idempotent {
		h = append(h, "idempotent")
	}
	if an.Destructive != nil && *an.Destructive {
		h = append(h, "destructive")
	}
	if an.OpenWorld != nil && *an.OpenWorld {
		h = append(h, "open-world")
	}
	if len(h) == 0 {
		return ""
	}
	return " [" + strings.Join(h, ", ") + "]"
}
