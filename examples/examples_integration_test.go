//go:build integration

package examples_test

import (
	"os"
	"path/filepath"
	"testing"
)

// mcpFixture is the reference MCP server that `npm ci` installs for the
// flow/mcptool tests; 06_mcp_tool uses it too.
const mcpFixture = "../flow/mcptool/testdata/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// integrationCases need what needsTag says; `make test` installs it.
var integrationCases = []exampleCase{
	{dir: "03_sandbox_backend", replays: 2, want: []string{
		`(?m)^== local `,
		`(?m)^  working directory: <workspace>$`,
		`(?m)^  host processes: visible$`,
		`(?m)^== bwrap `,
		`(?m)^  working directory: /workspace$`,
		`(?m)^  host processes: hidden$`,
		`evidence: run_shell_command ran on backend "bwrap", exit code 0, files \[note\.txt \(created\)\]`,
		`the host reads \S*work-bwrap/note.txt: hello`,
	}},
	{dir: "06_mcp_tool", replays: 1, want: []string{
		`connected to mcp-servers/everything \S+ over stdio: \d+ tools`,
		`The sum of 2 and 40 is 42\.`,
		`Echo: the answer is 42`,
		`evidence: everything__echo ran on backend "mcp", sandbox "mcp:everything"`,
	}},
}

func TestExamples_Integration(t *testing.T) {
	entry, err := filepath.Abs(mcpFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range integrationCases {
		if _, ok := needsTag[c.dir]; !ok {
			t.Errorf("%s is not listed in needsTag", c.dir)
		}
		t.Run(c.dir, func(t *testing.T) {
			t.Parallel()
			var env []string
			if c.dir == "06_mcp_tool" {
				// A missing install fails: skipping would hide that the
				// example did not run.
				if _, err := os.Stat(entry); err != nil {
					t.Fatalf("the MCP reference server is not installed (%v); run:\n\tcd flow/mcptool/testdata/server-everything && npm ci --no-audit --no-fund", err)
				}
				env = []string{"RATH_MCP_SERVER=node " + entry + " stdio"}
			}
			runExample(t, c, env)
		})
	}
	if len(integrationCases) != len(needsTag) {
		t.Errorf("%d integration cases, %d examples in needsTag", len(integrationCases), len(needsTag))
	}
}
