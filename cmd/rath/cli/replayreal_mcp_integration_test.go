//go:build integration

package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

// MCP tools over stdio and streamable HTTP (the reference server), called
// by a model behind an OpenAI-speaking server, in parallel: the run
// replays in a bare environment with the MCP server and the model's
// server stopped (on both stores under make soak).
func TestReplay_MCPToolsReplayInABareEnvironment(t *testing.T) {
	for _, backend := range replayStores() {
		for _, transport := range []string{"stdio", "streamableHttp"} {
			t.Run(backend+"/"+transport, func(t *testing.T) {
				t.Parallel()
				store := storeFor(t, backend)
				srv := modeltest.NewOpenAI(t)
				srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("ev__echo", `{"message":"hello mcp"}`), call("ev__get-sum", `{"a":1,"b":2}`)}},
					modeltest.Reply{Content: "echoed, and the sum is 3"})
				config, args := "", []string{"--mcp", "ev=node " + everythingEntry(t) + " stdio"}
				stop := func() {}
				if transport != "stdio" {
					var port string
					port, stop = startEverythingHTTP(t, transport)
					config, args = fmt.Sprintf(`{"mcp_servers": {"ev": {"url": "http://127.0.0.1:%s/mcp"}}}`, port), nil
				}
				env := userEnv(t, config, "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-mcp-0123456789", "OPENAI_DEFAULT_MODEL=m-mcp")
				argv := append(append(append([]string(nil), store...), "run", "--tools", "ev.*"), args...)
				r := rathEnv(t, env, append(argv, "use the tools")...)
				if r.code != 0 || !strings.Contains(r.stdout, "the sum is 3") || strings.Contains(r.stdout, "error") {
					t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				if last := string(srv.Requests()[1].Body); !strings.Contains(last, "The sum of 1 and 2 is 3") || !strings.Contains(last, "hello mcp") {
					t.Fatalf("the tools' results did not reach the model:\n%s", last)
				}
				stop()
				srv.Close()
				replayBare(t, store, runIDOf(t, r))
			})
		}
	}
}
