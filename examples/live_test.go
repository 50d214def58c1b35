package examples_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

// The Selector example (a flow.Router) and the Parallel one, run with
// -live against an HTTP server speaking the OpenAI API that answers from
// the example's script, replay with the stock binary in a bare
// environment, the server stopped, on both stores.
func TestExamples_LiveRunsReplay(t *testing.T) {
	const key = "sk-live-example-0123456789"
	for _, dir := range []string{"11_dynamic_selector", "13_parallel_fanout"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.NewOpenAI(t)
			srv.Push(scriptOf(t, dir)...)
			store := filepath.Join(t.TempDir(), "store")
			run(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL(), "OPENAI_API_KEY=" + key, "OPENAI_DEFAULT_MODEL=m-live"}, "-live", "-dir", store)
			if n := len(srv.Requests()); n == 0 || srv.Pending() != 0 {
				t.Fatalf("the example made %d requests and left %d answers", n, srv.Pending())
			}
			srv.Close()
			// The run recorded the provider it resolved (in its workflow
			// spec), never the key.
			r := rath(t, bareEnv(t), "--dir", store, "events", "--type", events.TypeRunStarted, "--json")
			if r.code != 0 || !strings.Contains(r.stdout, "m-live") || !strings.Contains(r.stdout, srv.URL()) || strings.Contains(r.stdout, key) {
				t.Fatalf("run.started: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			replayExampleRuns(t, dir, store)
		})
	}
}

// scriptOf is an example's cassette as the server's answers, in order.
func scriptOf(t *testing.T, dir string) []modeltest.Reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cassette.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Responses []struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"tool_calls"`
			Usage events.Usage `json:"usage"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	out := make([]modeltest.Reply, len(c.Responses))
	for i, r := range c.Responses {
		out[i] = modeltest.Reply{Content: r.Content, Usage: r.Usage}
		for _, tc := range r.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, events.ToolCall{Name: tc.Name, Arguments: string(tc.Arguments)})
		}
	}
	return out
}
