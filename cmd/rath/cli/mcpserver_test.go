package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// mcpServerEnv makes the test binary a stdio MCP server (serveMCP) instead
// of running tests.
const mcpServerEnv = "RATH_CLI_TEST_MCP"

// bigResult is the size of the "big" tool's text, over the cap the tests
// configure.
const bigResult = 50_000

// faultServer has the tools the fault tests need: one that kills the
// server, one that hangs, one whose result is too big, one with rich
// content, and a harmless one naming the process that answered.
func faultServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "faults", Version: "1.0.0"}, nil)
	type none struct{}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Say which server process answers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf("server pid %d", os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Kill the server without answering."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer too much."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("0123456789", bigResult/10)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pixel", Description: "An image, a link and structured content.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a red dot:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: redDot},
				&mcp.ResourceLink{URI: "file:///tmp/dot.png", Name: "dot.png"},
			}, StructuredContent: map[string]any{"width": 1, "height": 1}}, nil, nil
		})
	return s
}

// redDot is a 1×1 red PNG.
var redDot = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")

func serveMCP(mode string) int {
	if mode == "stall" || mode == "mute" {
		return stallMCP(mode == "mute")
	}
	if mode != "faults" {
		fmt.Fprintln(os.Stderr, "unknown MCP test server", mode)
		return 2
	}
	if err := faultServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "faults server:", err)
	}
	return 0
}

// withMCPConfig writes a config file naming servers (JSON objects) in a
// fresh RATH_HOME.
func withMCPConfig(t *testing.T, servers map[string]any) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("RATH_HOME", home)
	b, err := json.Marshal(map[string]any{"mcp_servers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// faultsEntry is the config entry starting faultServer.
func faultsEntry(t *testing.T, extra map[string]any) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{mcpServerEnv: "faults"}}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

// writeCassette writes a scripted cassette: one round of tool calls per
// entry of calls ("id:name:arguments"), then the answer.
func writeCassette(t *testing.T, answer string, calls ...string) string {
	t.Helper()
	var resp []map[string]any
	for _, c := range calls {
		parts := strings.SplitN(c, ":", 3)
		resp = append(resp, map[string]any{"tool_calls": []map[string]any{{"id": parts[0], "name": parts[1], "arguments": json.RawMessage(parts[2])}}})
	}
	resp = append(resp, map[string]any{"content": answer})
	b, _ := json.Marshal(map[string]any{"scripted": true, "responses": resp})
	path := filepath.Join(t.TempDir(), "cassette.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolReturns runs `rath run --json` and returns its tool.returned
// payloads by call id, with the summary line.
func toolReturns(t *testing.T, dir string, argv ...string) (map[string]events.ToolReturned, runEnd) {
	t.Helper()
	r := rathCLI(t, dir, append([]string{"run", "--json"}, argv...)...)
	if r.code != 0 {
		t.Fatalf("rath run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	got, end, err := parseToolReturns(r.stdout)
	if err != nil {
		t.Fatal(err)
	}
	return got, end
}

// parseToolReturns reads the output of `rath run --json`.
func parseToolReturns(stdout string) (map[string]events.ToolReturned, runEnd, error) {
	got := map[string]events.ToolReturned{}
	var end runEnd
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev events.Event
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type == "" {
			json.Unmarshal([]byte(line), &end)
			continue
		}
		if ev.Type == events.TypeToolReturned {
			var tr events.ToolReturned
			if err := json.Unmarshal(ev.Payload, &tr); err != nil {
				return nil, end, err
			}
			got[tr.CallID] = tr
		}
	}
	return got, end, nil
}

// TestMCP_Faults runs an agent on the config file's server while it is
// killed, hangs and answers too much: the run goes on, each fault reaches
// the model as a typed error or a marked truncation, and all is recorded.
func TestMCP_Faults(t *testing.T) {
	withMCPConfig(t, map[string]any{"faults": faultsEntry(t, map[string]any{"call_timeout": "1s", "max_result_bytes": 2000})})
	dir := t.TempDir()
	cas := writeCassette(t, "done despite the faults",
		`c1:faults__whoami:{}`, `c2:faults__crash:{}`, `c3:faults__whoami:{}`, `c4:faults__hang:{}`, `c5:faults__whoami:{}`,
		`c6:faults__big:{}`, `c7:faults__pixel:{}`)
	got, end := toolReturns(t, dir, "--cassette", cas, "be", "resilient")
	if end.Status != "done" {
		t.Fatalf("run ended %+v", end)
	}
	if got["c1"].ErrorKind != "" || got["c3"].ErrorKind != "" || got["c5"].ErrorKind != "" {
		t.Fatalf("whoami failed: %+v %+v %+v", got["c1"], got["c3"], got["c5"])
	}
	// The killed server is not asked again for the call it died on (not
	// read-only: it may have run), but the next call starts it again.
	if k := got["c2"].ErrorKind; k != "mcp_server_gone" {
		t.Errorf("crash: error kind %q (%s)", k, got["c2"].Error)
	}
	if k := got["c4"].ErrorKind; k != "timeout" {
		t.Errorf("hang: error kind %q (%s)", k, got["c4"].Error)
	}
	if tr := got["c6"].Truncated; tr == nil || tr.Limit != 2000 || tr.TextBytes != bigResult || tr.KeptText != 2000 {
		t.Errorf("big: truncation %+v", tr)
	}
	if n := got["c6"].OutputSize; n > 2200 {
		t.Errorf("big: %d bytes recorded", n)
	}
	var kinds []string
	for _, a := range got["c7"].Attachments {
		kinds = append(kinds, a.Kind)
	}
	if strings.Join(kinds, ",") != "image,resource_link,structured" || got["c7"].Attachments[0].Ref != eventlog.BlobHash(redDot) {
		t.Errorf("pixel: attachments %+v", got["c7"].Attachments)
	}

	// The server's pids: the one after the crash is a new process.
	out := mustRun(t, dir, "show", end.Output)
	if strings.Count(out, "server pid") < 2 {
		t.Errorf("show lacks the whoami results:\n%s", out)
	}
	// show lists the image and writes it out.
	att := t.TempDir()
	out = mustRun(t, dir, "show", end.Output, "--attachments", att)
	if !strings.Contains(out, "faults__pixel: image image/png") {
		t.Errorf("show lacks the image:\n%s", out)
	}
	if files, _ := filepath.Glob(filepath.Join(att, "*.png")); len(files) != 1 {
		t.Errorf("show --attachments wrote %v", files)
	} else if b, _ := os.ReadFile(files[0]); string(b) != string(redDot) {
		t.Errorf("the image written differs")
	}
	// The dossier shows the image and the truncation.
	html := mustRun(t, dir, "dossier", end.Run)
	for _, want := range []string{`<img class="attachment" alt="image returned by the tool" src="data:image/png;base64,`, "-byte cap: 2000 of 50000 bytes of text kept", "file:///tmp/dot.png"} {
		if !strings.Contains(html, want) {
			t.Errorf("dossier lacks %q", want)
		}
	}
	// The transcript of a run says so too.
	cas2 := writeCassette(t, "ok", `c1:faults__big:{}`, `c2:faults__pixel:{}`)
	withMCPConfig(t, map[string]any{"faults": faultsEntry(t, map[string]any{"max_result_bytes": 2000})})
	out = mustRun(t, t.TempDir(), "run", "--cassette", cas2, "again")
	for _, want := range []string{"← faults__big ok (", "truncated to 2000 of 50000 bytes", "attachments: image image/png, resource_link, structured application/json"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	// A replay answers from the log; the config's server is not needed.
	withMCPConfig(t, map[string]any{})
	if out := mustRun(t, dir, "replay", end.Run); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
}

func TestMCP_ToolsSelection(t *testing.T) {
	withMCPConfig(t, map[string]any{"faults": faultsEntry(t, nil)})
	dir := t.TempDir()
	out := mustRun(t, dir, "tools")
	for _, want := range []string{"read_workspace_file  (builtin", "faults__pixel  (mcp:faults, --tools faults.pixel) [read-only, idempotent]", `"required"`} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}
	views := decodeJSON[[]toolView](t, mustRun(t, dir, "tools", "--json"))
	if len(views) < 6 || views[len(views)-1].Source != "mcp:faults" {
		t.Errorf("tools --json: %+v", views)
	}
	cas := writeCassette(t, "ok", `c1:faults__crash:{}`)
	for _, tt := range []struct {
		tools, want string
	}{
		{"faults.nope", `MCP server faults has no tool "nope"`},
		{"other.*", `no MCP server "other"`},
		{"no_such_builtin", `unknown tool "no_such_builtin"`},
	} {
		r := rathCLI(t, dir, "run", "--cassette", cas, "--tools", tt.tools, "x")
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, tt.want) {
			t.Errorf("--tools %s: exit %d, output lacks %q:\n%s%s", tt.tools, r.code, tt.want, r.stdout, r.stderr)
		}
	}
	if r := rathCLI(t, dir, "run", "--cassette", cas, "--mcp", "bad name=x", "x"); r.code == 0 {
		t.Errorf("--mcp with a bad name ran")
	}
	// Selecting one tool offers only it: the scripted call to another is
	// an unknown tool.
	got, _ := toolReturns(t, dir, "--cassette", cas, "--tools", "faults.whoami", "x")
	if got["c1"].ErrorKind != "unknown_tool" {
		t.Errorf("a tool left out was called: %+v", got["c1"])
	}
}

// TestMCP_SubmitWorker submits a run with an --mcp server: a worker
// whose operator allows it (--allow-submitted-mcp) starts the server from
// the run's parameters, and the run replays from the record with no
// server.
func TestMCP_SubmitWorker(t *testing.T) {
	withMCPConfig(t, map[string]any{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// --mcp passes no environment: a script sets the server's mode.
	script := filepath.Join(t.TempDir(), "faults.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+mcpServerEnv+"=faults exec '"+exe+"' -test.run='^$'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cas := writeCassette(t, "asked", `c1:faults__whoami:{}`)
	id := strings.TrimSpace(mustRun(t, dir, "submit", "--cassette", cas, "--mcp", "faults="+script, "--tools", "faults.whoami", "who"))
	w := execpkg.Command(exe, "--dir", dir, "worker", "--lease", "2s", "--allow-submitted-mcp")
	w.Env = append(os.Environ(), mainEnv+"=1")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		w.Process.Signal(syscall.SIGTERM)
		w.Wait()
	}()
	if out := mustRun(t, dir, "wait", "--timeout", "2m", id); !strings.Contains(out, id+"\tdone") {
		t.Fatalf("wait: %s", out)
	}
	evs := mustRun(t, dir, "events", "--run", id, "--json")
	if !strings.Contains(evs, `"tool":"faults__whoami"`) || strings.Contains(evs, `"error_kind"`) {
		t.Fatalf("the worker's call failed:\n%s", evs)
	}
	if out := mustRun(t, dir, "replay", id); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
}
