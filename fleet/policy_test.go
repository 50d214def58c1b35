package fleet_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
)

// A worker runs what its operator allows and refuses the rest, naming
// what it refused and how to allow it: backends, MCP servers a run
// brings (the worker's own configured ones pass), workspaces and
// cassettes outside the workspace root.
func TestPolicy_Check(t *testing.T) {
	cfg := map[string]mcptool.Server{"gh": {Command: "gh-mcp", Args: []string{"serve"}}}
	strict := fleet.Policy{Servers: cfg} // the default backends
	open := fleet.Policy{Backends: []string{"local"}, SubmittedMCP: true}
	root := t.TempDir()
	inside := filepath.Join(root, "ws")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	rooted := fleet.Policy{Backends: []string{"local", "bwrap", "opensandbox"}, WorkspaceRoot: root}
	brought := func(name string, s mcptool.Server) map[string]mcptool.Server {
		return map[string]mcptool.Server{name: s}
	}
	for _, tc := range []struct {
		name   string
		policy fleet.Policy
		asks   fleet.Asks
		refuse string
	}{
		{"no workspace, any backend", strict, fleet.Asks{Backend: "local"}, ""},
		{"local workspace", strict, fleet.Asks{Backend: "local", Workspace: "/w"}, `backend "local"`},
		{"bwrap workspace", strict, fleet.Asks{Backend: "bwrap", Workspace: "/w"}, ""},
		{"allowed local", open, fleet.Asks{Backend: "local", Workspace: "/w"}, ""},
		{"brought command", strict, fleet.Asks{MCP: brought("x", mcptool.Server{Command: "sh", Args: []string{"-c", "id"}})}, `MCP server "x" (command "sh -c id")`},
		{"brought url", strict, fleet.Asks{MCP: brought("x", mcptool.Server{URL: "http://evil.example/mcp"})}, `(url "http://evil.example/mcp")`},
		{"a configured name, another command", strict, fleet.Asks{MCP: brought("gh", mcptool.Server{Command: "sh"})}, `MCP server "gh"`},
		{"the configured server itself", strict, fleet.Asks{MCP: brought("gh", mcptool.Server{Command: "gh-mcp", Args: []string{"serve"}})}, ""},
		{"allowed", open, fleet.Asks{MCP: brought("x", mcptool.Server{Command: "sh"})}, ""},
		{"a workspace under the root", rooted, fleet.Asks{Backend: "local", Workspace: inside}, ""},
		{"a workspace elsewhere", rooted, fleet.Asks{Backend: "bwrap", Workspace: t.TempDir()}, "workspace"},
		{"a missing workspace under the root", rooted, fleet.Asks{Backend: "local", Workspace: filepath.Join(root, "missing")}, ""},
		{"a missing workspace elsewhere", rooted, fleet.Asks{Backend: "local", Workspace: filepath.Join(root, "..", "missing")}, "workspace"},
		{"an opensandbox spec is not a path", rooted, fleet.Asks{Backend: "opensandbox", Workspace: "python:3.12"}, ""},
		{"a cassette under the root", rooted, fleet.Asks{Cassette: filepath.Join(inside, "c.json")}, ""},
		{"a cassette elsewhere", rooted, fleet.Asks{Cassette: "/etc/passwd"}, `cassette "/etc/passwd"`},
		{"a cassette elsewhere, no root", strict, fleet.Asks{Cassette: "/etc/passwd"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Check(tc.asks)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *fleet.RefusedError
			if !errors.Is(err, fleet.ErrRefused) || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.refuse) || re.Allow == "" {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.refuse)
			}
		})
	}
}

// A worker writes its own rules into a run's parameters, over any a
// submission put under that name, and removes them when it has none:
// a submitter cannot make a run look imposed upon.
func TestPolicy_ImposeOverwritesTheSubmission(t *testing.T) {
	forged := `[{"tool":"nothing"}]`
	for _, tc := range []struct {
		name   string
		policy fleet.Policy
		want   string
	}{
		{"rules", fleet.Policy{Approvals: []flow.ApprovalRule{{Tool: "run_shell_command"}}}, `[{"tool":"run_shell_command"}]`},
		{"none", fleet.Policy{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := rath.ParseAgentSpec(map[string]string{fleet.ApprovalsParam: forged})
			if err != nil {
				t.Fatal(err)
			}
			tc.policy.Impose(&spec)
			params := spec.Params()
			got, ok := params[fleet.ApprovalsParam]
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("params %v, want %s = %q", params, fleet.ApprovalsParam, tc.want)
			}
		})
	}
}
