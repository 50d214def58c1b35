package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/spf13/cobra"
)

// Run parameters of MCP servers and tools. "mcp" holds the --mcp servers
// (a worker starts them itself); "mcp_tools" the specs of the MCP tools
// the agent was given, so a replay offers the model the same tools with
// the servers stopped.
const (
	paramMCP      = "mcp"
	paramMCPTools = "mcp_tools"
)

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

// toolSelection splits --tools into built-in names and MCP selectors
// (NAME.TOOL or NAME.*, by server). all selects every tool; empty, every
// MCP tool and no built-in.
type toolSelection struct {
	builtins []string
	mcp      map[string][]string // server → its tools' names there; "*" for all
	allMCP   bool
}

func parseTools(list string) (toolSelection, error) {
	sel := toolSelection{mcp: map[string][]string{}}
	switch list {
	case "":
		sel.allMCP = true
		return sel, nil
	case "all":
		sel.builtins, sel.allMCP = builtin.Names(), true
		return sel, nil
	}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if server, tool, ok := strings.Cut(n, "."); ok && server != "" && tool != "" {
			sel.mcp[server] = append(sel.mcp[server], tool)
			continue
		}
		if !slices.Contains(builtin.Names(), n) {
			return sel, fmt.Errorf("unknown tool %q (want all, SERVER.TOOL or SERVER.* for MCP tools, or some of: %s)", n, strings.Join(builtin.Names(), ", "))
		}
		sel.builtins = append(sel.builtins, n)
	}
	return sel, nil
}

// mcpServers returns the servers a run may use: the config file's
// "mcp_servers", then its --mcp servers, which win on a name clash. The
// config entries that do not parse come back as an error beside the
// others.
func mcpServers(params map[string]string) (map[string]mcptool.Server, error) {
	servers, loadErr := mcptool.LoadServers("")
	if servers == nil {
		return nil, loadErr // the file itself is unreadable
	}
	if raw := params[paramMCP]; raw != "" {
		var flagged map[string]mcptool.Server
		if err := json.Unmarshal([]byte(raw), &flagged); err != nil {
			return nil, fmt.Errorf("run parameter %s: %w", paramMCP, err)
		}
		maps.Copy(servers, flagged)
	}
	return servers, loadErr
}

// mcpTools connects the servers the run's tools need and returns the
// selected tools, recording their specs in params[paramMCPTools].
func mcpTools(ctx context.Context, rt *rath.Runtime, params map[string]string, sel toolSelection) ([]flow.Tool, error) {
	servers, loadErr := mcpServers(params)
	if servers == nil || sel.allMCP && loadErr != nil {
		return nil, loadErr
	}
	names := slices.Sorted(maps.Keys(servers))
	if !sel.allMCP {
		names = slices.Sorted(maps.Keys(sel.mcp))
		for _, n := range names {
			if _, ok := servers[n]; !ok {
				return nil, errors.Join(fmt.Errorf("--tools: no MCP server %q (give it with --mcp %s=… or in %s)", n, n, flow.DefaultConfigPath(os.Getenv)), loadErr)
			}
		}
	}
	var out []flow.Tool
	var specs []mcptool.Spec
	for _, name := range names {
		srv := servers[name]
		for _, s := range srv.Secrets(name, os.Getenv) {
			rt.Secrets().Add(s.Name, s.Value)
		}
		// The runtime's manager outlives one run in a worker: a server
		// connected by an earlier run is used again.
		if err := rt.MCP().ConnectServer(ctx, name, srv); err != nil && !errors.Is(err, mcptool.ErrAlreadyConnected) {
			return nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
		tools, err := rt.MCP().Tools(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
		want := sel.mcp[name]
		found := map[string]bool{}
		for _, t := range tools {
			spec, _ := mcptool.SpecOf(t)
			if sel.allMCP || slices.Contains(want, "*") || slices.Contains(want, spec.Remote) {
				found[spec.Remote] = true
				out, specs = append(out, t), append(specs, spec)
			}
		}
		for _, w := range want {
			if w != "*" && !found[w] {
				return nil, fmt.Errorf("--tools: MCP server %s has no tool %q", name, w)
			}
		}
	}
	if len(specs) > 0 {
		b, err := json.Marshal(specs)
		if err != nil {
			return nil, err
		}
		params[paramMCPTools] = string(b)
	}
	return out, nil
}

// recordedMCPTools rebuilds, for a replay, the MCP tools a run recorded.
func recordedMCPTools(params map[string]string) ([]flow.Tool, error) {
	raw := params[paramMCPTools]
	if raw == "" {
		return nil, nil
	}
	var specs []mcptool.Spec
	if err := json.Unmarshal([]byte(raw), &specs); err != nil {
		return nil, fmt.Errorf("run parameter %s: %w", paramMCPTools, err)
	}
	return mcptool.Recorded(specs), nil
}
