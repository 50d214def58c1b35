package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model/scripted"
)

func MustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// MustManager returns a manager closed at the end of the test.
func MustManager(tb testing.TB, opts mcptool.Options) *mcptool.Manager {
	tb.Helper()
	m := mcptool.NewManagerWith(opts)
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return m
}

func mustTools(t *testing.T, m *mcptool.Manager, server string) []flow.Tool {
	t.Helper()
	tools, err := m.Tools(t.Context(), server)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// outcome is what the agent loop recorded for one call.
type outcome struct {
	ret   events.ToolReturned
	chunk events.Chunk
}

// runAgent has a scripted model make calls (one round), then answer, and
// returns the recorded outcomes by call id.
func runAgent(t *testing.T, rt *rath.Runtime, tools []flow.Tool, calls ...scripted.ToolCall) map[string]outcome {
	t.Helper()
	p, err := flow.ResolveProvider(flow.Provider{Client: scripted.New(scripted.Entry{ToolCalls: calls}, scripted.Entry{Content: "done"}), Model: "scripted"},
		flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := flow.NewAgent("Use the tools.", p, flow.WithTools(tools...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewUserSession(t.Context(), "Compute.")
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
			got[c.ToolCallID] = outcome{chunk: c}
		}
	}
	evs, err := rt.Store().ReadStream(t.Context(), out.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeToolReturned {
			var r events.ToolReturned
			if err := json.Unmarshal(ev.Payload, &r); err != nil {
				t.Fatal(err)
			}
			o := got[r.CallID]
			o.ret = r
			got[r.CallID] = o
		}
	}
	if len(got) != len(calls) {
		t.Fatalf("%d outcomes for %d calls", len(got), len(calls))
	}
	return got
}

func TestManager_Tools(t *testing.T) {
	m := MustManager(t, mcptool.Options{})
	connectInMemory(t, m, "calc")
	type info struct {
		Name, Description string
		Parallel          bool
		Schema            map[string]any
	}
	var got []info
	for _, tool := range mustTools(t, m, "calc") {
		var sc map[string]any
		if err := json.Unmarshal(tool.Schema(), &sc); err != nil {
			t.Fatal(err)
		}
		ps, _ := tool.(flow.ParallelSafe)
		got = append(got, info{tool.Name(), tool.Description(), ps != nil && ps.ParallelSafe(), sc})
	}
	addSchema := map[string]any{"type": "object", "required": []any{"a", "b"}, "additionalProperties": false,
		"properties": map[string]any{"a": map[string]any{"type": "integer", "description": "the first addend"}, "b": map[string]any{"type": "integer", "description": "the second addend"}}}
	want := []info{
		{"calc__add", "Add two integers.", true, addSchema},
		{"calc__fail", "Always fails.", false, map[string]any{"type": "object", "additionalProperties": false}},
		{"calc__getenv", "Read an environment variable of the server.", false, map[string]any{"type": "object", "required": []any{"name"}, "additionalProperties": false,
			"properties": map[string]any{"name": map[string]any{"type": "string"}}}},
		{"calc__math_mul", "Multiply.", false, addSchema},
		{"calc__pixel", "Returns a tiny image.", false, map[string]any{"type": "object", "additionalProperties": false}},
		{"calc__shout", "Tool shout of MCP server calc.", false, map[string]any{"type": "object", "required": []any{"text"}, "additionalProperties": false,
			"properties": map[string]any{"text": map[string]any{"type": "string", "minLength": float64(1)}}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	bare := MustManager(t, mcptool.Options{BareNames: true})
	connectInMemory(t, bare, "calc")
	var names []string
	for _, tool := range mustTools(t, bare, "calc") {
		names = append(names, tool.Name())
	}
	if diff := cmp.Diff([]string{"add", "fail", "getenv", "math_mul", "pixel", "shout"}, names); diff != "" {
		t.Errorf("bare names (-want +got):\n%s", diff)
	}
}

func TestManager_AgentLoop(t *testing.T) {
	rt := MustOpen(t)
	m := MustManager(t, mcptool.Options{})
	connectInMemory(t, m, "calc")
	got := runAgent(t, rt, mustTools(t, m, "calc"),
		scripted.ToolCall{ID: "add", Name: "calc__add", Arguments: `{"a":2,"b":40}`},
		scripted.ToolCall{ID: "mul", Name: "calc__math_mul", Arguments: `{"a":6,"b":7}`},
		scripted.ToolCall{ID: "fail", Name: "calc__fail", Arguments: `{}`},
		scripted.ToolCall{ID: "pixel", Name: "calc__pixel"},
		scripted.ToolCall{ID: "shout", Name: "calc__shout", Arguments: `{"text":"hey"}`},
		scripted.ToolCall{ID: "bad args", Name: "calc__add", Arguments: `{"a":"two","b":40}`},
		scripted.ToolCall{ID: "bad draft7", Name: "calc__shout", Arguments: `{"text":""}`},
		scripted.ToolCall{ID: "unknown", Name: "calc__sub", Arguments: `{"a":1,"b":1}`},
	)
	img := []byte("\x89PNG-not-really")
	tests := []struct {
		id, kind, content string
	}{
		{"add", "", "2 + 40 = 42"},
		{"mul", "", "42"},
		{"fail", mcptool.KindToolError, "error (mcp_tool_error): mcptool: calc tool fail failed: the disk is on fire"},
		{"pixel", "", "one pixel:\n[image image/png, 15 bytes, sha256 " + eventlog.BlobHash(img) + "]"},
		{"shout", "", `{"shouted":"hey!"}`},
		{"bad args", flow.ToolErrSchema, "error (schema_violation): arguments do not match the schema of calc__add"},
		{"bad draft7", flow.ToolErrSchema, "error (schema_violation): arguments do not match the schema of calc__shout"},
		{"unknown", flow.ToolErrUnknown, `error (unknown_tool): no tool named "calc__sub"`},
	}
	for _, tt := range tests {
		o := got[tt.id]
		if o.ret.ErrorKind != tt.kind || o.chunk.Meta["error_kind"] != tt.kind {
			t.Errorf("%s: error kind %q (meta %v), want %q: %s", tt.id, o.ret.ErrorKind, o.chunk.Meta, tt.kind, o.ret.Error)
		}
		if !strings.HasPrefix(o.chunk.Content, tt.content) {
			t.Errorf("%s: content %q, want it to start with %q", tt.id, o.chunk.Content, tt.content)
		}
		if tt.kind == "" || tt.kind == mcptool.KindToolError {
			if o.ret.Backend != "mcp" || o.ret.SandboxID != "mcp:calc" {
				t.Errorf("%s: evidence %q %q", tt.id, o.ret.Backend, o.ret.SandboxID)
			}
		}
	}
	if b, err := rt.Store().GetBlob(t.Context(), eventlog.BlobHash(img)); err != nil || string(b) != string(img) {
		t.Errorf("image blob = %q, %v", b, err)
	}
}

func TestManager_CallErrors(t *testing.T) {
	m := MustManager(t, mcptool.Options{})
	ss := connectInMemory(t, m, "calc")
	tools := mustTools(t, m, "calc")

	_, err := m.Call(t.Context(), "calc", "nope", nil)
	var te *flow.ToolError
	var ce *mcptool.CallError
	if !errors.As(err, &te) || te.Kind != mcptool.KindError || !errors.As(err, &ce) || ce.Code != -32602 || !strings.Contains(ce.Message, `unknown tool "nope"`) {
		t.Errorf("unknown tool on the server: %v", err)
	}
	_, err = m.Call(t.Context(), "other", "add", nil)
	if !errors.Is(err, mcptool.ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}

	// The server goes away: calls and listings say so, with a typed error.
	ss.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = tools[0].Call(t.Context(), nil, json.RawMessage(`{"a":1,"b":2}`))
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.As(err, &te) || te.Kind != mcptool.KindServerGone || !errors.Is(err, mcptool.ErrServerGone) {
		t.Fatalf("call after the server left: %v", err)
	}
	if !strings.Contains(err.Error(), "server calc is gone") {
		t.Errorf("message %q", err)
	}
	if _, err := m.Tools(t.Context(), "calc"); !errors.Is(err, mcptool.ErrServerGone) {
		t.Errorf("Tools after the server left: %v", err)
	}

	// Reconnected, the tools from before work again.
	connectInMemory(t, m, "calc")
	res, err := tools[0].Call(t.Context(), nil, json.RawMessage(`{"a":1,"b":2}`))
	if err != nil || res.Content != "1 + 2 = 3" {
		t.Errorf("after reconnecting: %q, %v", res.Content, err)
	}
}

func TestManager_Lifecycle(t *testing.T) {
	m := mcptool.NewManager()
	ct, _ := newPair(t)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"bad name", m.ConnectTransport(t.Context(), "my server", ct), mcptool.ErrInvalidName},
		{"empty name", m.ConnectTransport(t.Context(), "", ct), mcptool.ErrInvalidName},
		{"long name", m.ConnectTransport(t.Context(), strings.Repeat("x", 33), ct), mcptool.ErrInvalidName},
	}
	connectInMemory(t, m, "calc")
	ct2, _ := newPair(t)
	tests = append(tests, struct {
		name string
		err  error
		want error
	}{"twice", m.ConnectTransport(t.Context(), "calc", ct2), mcptool.ErrAlreadyConnected})
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"calc"}, m.Servers()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if info, err := m.Server("calc"); err != nil || info.ServerInfo.Name != "calc" {
		t.Errorf("Server(calc) = %+v, %v", info, err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := m.Tools(t.Context(), "calc"); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Tools after Close: %v", err)
	}
	ct3, _ := newPair(t)
	if err := m.ConnectTransport(t.Context(), "late", ct3); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Connect after Close: %v", err)
	}
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("t", 80)
	tests := []struct {
		server, tool string
		bare         bool
		want         string
	}{
		{"everything", "get-sum", false, "everything__get-sum"},
		{"everything", "get-sum", true, "get-sum"},
		{"fs", "read.file/v2", false, "fs__read_file_v2"},
		{"fs", "", true, "_"},
		{"s", long, false, "s__" + strings.Repeat("t", 52) + "_"},
	}
	for _, tt := range tests {
		got := mcptool.ToolName(tt.server, tt.tool, tt.bare)
		if tt.tool == long {
			if len(got) != mcptool.MaxToolName || !strings.HasPrefix(got, tt.want) {
				t.Errorf("ToolName(%q, long) = %q (%d chars)", tt.server, got, len(got))
			}
			continue
		}
		if got != tt.want {
			t.Errorf("ToolName(%q, %q, %v) = %q, want %q", tt.server, tt.tool, tt.bare, got, tt.want)
		}
	}
	if a, b := mcptool.ToolName("s", long+"a", false), mcptool.ToolName("s", long+"b", false); a == b {
		t.Errorf("two long names collide: %q", a)
	}
}

// helperServer returns a Server running this test binary as the calc
// server over stdio.
func helperServer(t *testing.T, mode string, env map[string]string) mcptool.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"RATH_MCPTOOL_SERVER": mode}
	for k, v := range env {
		e[k] = v
	}
	return mcptool.Server{Command: exe, Args: []string{"-test.run=^$"}, Env: e}
}

func TestManager_Stdio(t *testing.T) {
	t.Setenv("RATH_TEST_SECRET", "do-not-leak")
	m := MustManager(t, mcptool.Options{})
	for _, mode := range []string{"exit-on-eof", "ignore-eof"} {
		if err := m.ConnectServer(t.Context(), mode, helperServer(t, mode, map[string]string{"GREETING": "hi"})); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ args, want string }{
		{`{"name":"GREETING"}`, `GREETING="hi" set=true`},
		{`{"name":"RATH_TEST_SECRET"}`, `RATH_TEST_SECRET="" set=false`},
	} {
		res, err := m.Call(t.Context(), "ignore-eof", "getenv", json.RawMessage(tt.args))
		if err != nil || res.Content != tt.want {
			t.Errorf("getenv %s = %q, %v, want %q", tt.args, res.Content, err, tt.want)
		}
	}
	// Close (by MustManager's cleanup) must treat the SIGTERM the
	// ignore-eof server needs as a normal end.
}

func TestManager_StdioServerDies(t *testing.T) {
	m := MustManager(t, mcptool.Options{})
	srv := helperServer(t, "exit-on-eof", nil)
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = append(os.Environ(), "RATH_MCPTOOL_SERVER=exit-on-eof")
	if err := m.Connect(t.Context(), "calc", cmd); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(t.Context(), "calc", "add", json.RawMessage(`{"a":1,"b":1}`)); err != nil {
		t.Fatal(err)
	}
	add := findTool(t, mustTools(t, m, "calc"), "calc__add")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The next call starts the server again: before sending, when the
	// connection has noticed the death, or as a retry, since add is
	// read-only and so safe to send twice.
	res, err := add.Call(t.Context(), nil, json.RawMessage(`{"a":1,"b":1}`))
	if err != nil || res.Content != "1 + 1 = 2" {
		t.Fatalf("call after the server was killed: %q, %v", res.Content, err)
	}
	// A server that cannot start again gives a typed error naming it.
	m2 := MustManager(t, mcptool.Options{})
	dir := t.TempDir()
	exe := filepath.Join(dir, "server")
	if err := os.Symlink(srv.Command, exe); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, srv.Args...)
	cmd.Env = append(os.Environ(), "RATH_MCPTOOL_SERVER=exit-on-eof")
	if err := m2.Connect(t.Context(), "calc", cmd); err != nil {
		t.Fatal(err)
	}
	os.Remove(exe)
	cmd.Process.Kill()
	time.Sleep(300 * time.Millisecond) // let the connection see the end
	_, err = m2.Call(t.Context(), "calc", "add", json.RawMessage(`{"a":1,"b":1}`))
	var te *flow.ToolError
	if !errors.As(err, &te) || te.Kind != mcptool.KindServerGone || !strings.Contains(err.Error(), "calc") {
		t.Fatalf("call to a killed server that cannot restart: %v", err)
	}
}

func TestManager_StartFailure(t *testing.T) {
	m := MustManager(t, mcptool.Options{})
	err := m.ConnectServer(t.Context(), "broken", mcptool.Server{Command: "sh", Args: []string{"-c", "echo cannot start: missing key >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "cannot start: missing key") {
		t.Errorf("error %v does not carry the server's stderr", err)
	}
	if err := m.ConnectServer(t.Context(), "nothing", mcptool.Server{Command: "/nonexistent/server"}); err == nil {
		t.Error("a missing program connected")
	}
}

func TestConnectConfig(t *testing.T) {
	dir := t.TempDir()
	good := helperServer(t, "exit-on-eof", nil)
	cfg := map[string]any{
		"mcp_servers": map[string]any{
			"calc":    map[string]any{"command": good.Command, "args": good.Args, "env": good.Env, "cwd": "."},
			"typo":    map[string]any{"command": "x", "argv": []string{"y"}},
			"http":    map[string]any{"command": "x", "type": "sse"},
			"ftp":     map[string]any{"url": "ftp://127.0.0.1/"},
			"carrier": map[string]any{"command": "x", "type": "pigeon"},
			"empty":   map[string]any{},
		},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	m := MustManager(t, mcptool.Options{})
	err := m.ConnectConfig(t.Context(), path)
	for _, w := range []string{"mcp server empty in " + path + ": mcptool: invalid server config: no command",
		`mcp server http in ` + path + `: mcptool: invalid server config: an HTTP server has a url, not a command`,
		`mcp server ftp in ` + path + `: mcptool: invalid server config: url "ftp://127.0.0.1/": want http:// or https://`,
		`mcp server carrier in ` + path + `: mcptool: invalid server config: transport "pigeon" is not supported`,
		`mcp server typo in ` + path + `: mcptool: invalid server config: json: unknown field "argv"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	if !errors.Is(err, mcptool.ErrConfig) {
		t.Errorf("error does not match ErrConfig: %v", err)
	}
	if diff := cmp.Diff([]string{"calc"}, m.Servers()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if tools := mustTools(t, m, "calc"); len(tools) != 6 {
		t.Errorf("%d tools", len(tools))
	}

	// RATH_HOME picks the default path; a missing file connects nothing.
	t.Setenv("RATH_HOME", t.TempDir())
	m2 := MustManager(t, mcptool.Options{})
	if err := m2.ConnectConfig(t.Context(), ""); err != nil || len(m2.Servers()) != 0 {
		t.Errorf("missing config: %v, %v", err, m2.Servers())
	}
}
