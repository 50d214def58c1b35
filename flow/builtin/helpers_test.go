package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"
)

// MustOpen opens a runtime in a temporary directory; reg nil means the
// built-in backends.
func MustOpen(tb testing.TB, reg *sandbox.Registry) *rath.Runtime {
	tb.Helper()
	rt, err := rath.OpenWith(context.Background(), rath.Options{Dir: tb.TempDir(), Sandboxes: reg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// hostDir returns a fresh directory with symlinks resolved, so it equals
// the sandbox's Workdir.
func hostDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// placeAt returns a new user session placed on backend over dir.
func placeAt(t *testing.T, rt *rath.Runtime, backend, dir string) *session.Session {
	t.Helper()
	s, err := rt.NewUserSession(t.Context(), "Work in the workspace.")
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.To(t.Context(), backend, dir); err != nil {
		t.Fatal(err)
	}
	return s
}

// placed returns a new user session placed on backend over a fresh
// workspace directory (returned too).
func placed(t *testing.T, rt *rath.Runtime, backend string) (*session.Session, string) {
	t.Helper()
	dir := hostDir(t)
	return placeAt(t, rt, backend, dir), dir
}

func readHost(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// writeFiles creates files (path -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call is one tool call the scripted model makes.
type call struct {
	id, name, args string
}

// outcome is what the loop recorded for one call.
type outcome struct {
	ret   events.ToolReturned
	chunk events.Chunk
}

// runAgent drives an agent with the given tools through one round of
// calls (all in one model turn) and a final answer, and returns what the
// loop recorded per call id.
func runAgent(t *testing.T, rt *rath.Runtime, s *session.Session, tools []flow.Tool, calls ...call) map[string]outcome {
	t.Helper()
	var tcs []scripted.ToolCall
	for _, c := range calls {
		tcs = append(tcs, scripted.ToolCall{ID: c.id, Name: c.name, Arguments: c.args})
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: scripted.New(scripted.Entry{ToolCalls: tcs}, scripted.Entry{Content: "done"}), Model: "scripted"},
		flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := flow.NewAgent("You use tools.", p, flow.WithTools(tools...))
	if err != nil {
		t.Fatal(err)
	}
	out, err := agent.Forward(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]outcome{}
	for _, c := range out.Chunks() {
		if c.Role == events.RoleToolResult {
			o := got[c.ToolCallID]
			o.chunk = c
			got[c.ToolCallID] = o
		}
	}
	evs, err := rt.Store().ReadStream(t.Context(), out.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type != events.TypeToolReturned {
			continue
		}
		var r events.ToolReturned
		if err := json.Unmarshal(ev.Payload, &r); err != nil {
			t.Fatal(err)
		}
		o := got[r.CallID]
		o.ret = r
		got[r.CallID] = o
	}
	if len(got) != len(calls) {
		t.Fatalf("recorded %d outcomes for %d calls: %+v", len(got), len(calls), got)
	}
	return got
}

// allTools returns every built-in tool on rt's pool.
func allTools(t *testing.T, rt *rath.Runtime) []flow.Tool {
	t.Helper()
	tools, err := builtin.New(rt.Sandboxes())
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// blob returns a stored blob's content.
func blob(t *testing.T, rt *rath.Runtime, hash string) string {
	t.Helper()
	b, err := rt.Store().GetBlob(t.Context(), hash)
	if err != nil {
		t.Fatalf("blob %s: %v", hash, err)
	}
	return string(b)
}

func args(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
