//go:build integration

package mcptool_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model/scripted"
)

// everythingFixture is the npm project pinning the reference server; its
// node_modules is installed by `make test` from the committed lock file.
const everythingFixture = "testdata/server-everything"

// everything returns how to run @modelcontextprotocol/server-everything
// over stdio. A missing install fails the test: skipping would hide that
// the integration suite did not run.
func everything(t *testing.T) mcptool.Server {
	t.Helper()
	entry, err := filepath.Abs(filepath.Join(everythingFixture, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the MCP reference server is not installed (%v); run:\n\tcd flow/mcptool/%s && npm ci --no-audit --no-fund", err, everythingFixture)
	}
	return mcptool.Server{Command: "node", Args: []string{entry, "stdio"}}
}

func TestEverything(t *testing.T) {
	m := MustManager(t, mcptool.Options{})
	if err := m.ConnectServer(t.Context(), "everything", everything(t)); err != nil {
		t.Fatal(err)
	}
	tools := mustTools(t, m, "everything")
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name())
		var sc map[string]any
		if err := json.Unmarshal(tool.Schema(), &sc); err != nil || sc["type"] != "object" || sc["$schema"] != nil {
			t.Errorf("%s: schema %s", tool.Name(), tool.Schema())
		}
	}
	for _, want := range []string{"everything__echo", "everything__get-sum"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	rt := MustOpen(t)
	got := runAgent(t, rt, tools,
		scripted.ToolCall{ID: "echo", Name: "everything__echo", Arguments: `{"message":"hello from rath"}`},
		scripted.ToolCall{ID: "sum", Name: "everything__get-sum", Arguments: `{"a":2,"b":40}`},
		scripted.ToolCall{ID: "unknown", Name: "everything__no-such-tool", Arguments: `{}`},
		scripted.ToolCall{ID: "bad", Name: "everything__get-sum", Arguments: `{"a":"two"}`},
	)
	for id, want := range map[string]string{"echo": "Echo: hello from rath", "sum": "The sum of 2 and 40 is 42"} {
		o := got[id]
		if o.ret.ErrorKind != "" || !strings.Contains(o.chunk.Content, want) {
			t.Errorf("%s: %s %q, want %q", id, o.ret.ErrorKind, o.chunk.Content, want)
		}
		if o.ret.Backend != "mcp" || o.ret.SandboxID != "mcp:everything" {
			t.Errorf("%s: evidence %q %q", id, o.ret.Backend, o.ret.SandboxID)
		}
	}
	if o := got["unknown"]; o.ret.ErrorKind != flow.ToolErrUnknown {
		t.Errorf("unknown tool: %s %q", o.ret.ErrorKind, o.chunk.Content)
	}
	if o := got["bad"]; o.ret.ErrorKind != flow.ToolErrSchema {
		t.Errorf("bad arguments: %s %q", o.ret.ErrorKind, o.chunk.Content)
	}

	// A tool the server does not have, called directly: this server
	// answers with an isError result, not a JSON-RPC error.
	_, err := m.Call(t.Context(), "everything", "no-such-tool", nil)
	var te *flow.ToolError
	var ce *mcptool.CallError
	if !errors.As(err, &te) || te.Kind != mcptool.KindToolError || !errors.As(err, &ce) || !strings.Contains(ce.Message, "no-such-tool") {
		t.Errorf("unknown tool on the server: %v", err)
	}
	// Close (MustManager's cleanup) must stop the server, which ignores
	// EOF, without reporting its SIGTERM exit as an error.
}
