package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model/scripted"
)

type sizeIn struct {
	N int `json:"n"`
}

// freezerServer has a tool that stops its own process (SIGSTOP), the
// hardest hang: the server answers nothing, pings included, and ignores
// SIGTERM; and a tool that returns as much text as asked.
func freezerServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "freezer", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "freeze", Description: "Stop the server."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			// The stop reaches the other threads a moment later: never
			// answer, so nothing slips out before it does.
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return n bytes of text and n bytes of image."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sizeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: strings.Repeat("é", in.N/2)},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, in.N)},
			}}, nil, nil
		})
	return s
}

func freezerCmd(t *testing.T) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "RATH_MCPTOOL_SERVER=freezer")
	return cmd
}

// After a call times out on a hung server, the next call does not wait
// its whole timeout on the same server: a server Connect started is
// restarted and the call succeeds.
func TestManager_HungServerIsRestarted(t *testing.T) {
	m := MustManager(t, mcptool.Options{CallTimeout: 3 * time.Second, PingTimeout: 300 * time.Millisecond})
	if err := m.Connect(t.Context(), "fz", freezerCmd(t)); err != nil {
		t.Fatal(err)
	}
	tools := mustTools(t, m, "fz")
	rt := MustOpen(t)
	got := runAgent(t, rt, tools,
		scripted.ToolCall{ID: "c1", Name: "fz__pid"},
		scripted.ToolCall{ID: "c2", Name: "fz__freeze"},
		scripted.ToolCall{ID: "c3", Name: "fz__pid"})
	if got["c2"].ret.ErrorKind != flow.ToolErrTimeout {
		t.Fatalf("freeze: %+v", got["c2"].ret)
	}
	first, again := got["c1"].chunk.Content, got["c3"].chunk.Content
	if got["c3"].ret.ErrorKind != "" || again == "" || again == first {
		t.Fatalf("the call after the hang should reach a restarted server: before pid %q, after %q (%+v)", first, again, got["c3"].ret)
	}
}

// A hung server that cannot be restarted (ConnectTransport) fails the
// next call after one short ping, and later calls at once.
func TestManager_HungServerFailsFast(t *testing.T) {
	m := MustManager(t, mcptool.Options{PingTimeout: 200 * time.Millisecond})
	if err := m.ConnectTransport(t.Context(), "fz", &mcp.CommandTransport{Command: freezerCmd(t), TerminateDuration: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err := m.Call(ctx, "fz", "freeze", nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("freeze: %v", err)
	}
	for i := range 3 {
		start := time.Now()
		_, err := m.Call(t.Context(), "fz", "pid", nil) // no deadline: old code waited forever
		var te *flow.ToolError
		if !errors.As(err, &te) || te.Kind != mcptool.KindServerHung || !errors.Is(err, mcptool.ErrUnresponsive) {
			t.Fatalf("call %d: %v", i, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("call %d took %s", i, d)
		}
	}
}

// A result over the cap is cut, and the cut is in the recorded result.
func TestManager_ResultCap(t *testing.T) {
	m := MustManager(t, mcptool.Options{MaxResultBytes: 1000})
	if err := m.Connect(t.Context(), "fz", freezerCmd(t)); err != nil {
		t.Fatal(err)
	}
	rt := MustOpen(t)
	got := runAgent(t, rt, mustTools(t, m, "fz"),
		scripted.ToolCall{ID: "small", Name: "fz__big", Arguments: `{"n": 100}`},
		scripted.ToolCall{ID: "large", Name: "fz__big", Arguments: `{"n": 200000}`})
	if c := got["small"].chunk.Content; strings.Contains(c, "cap") || got["small"].ret.OutputSize > 1000 {
		t.Fatalf("small result: %q", c)
	}
	c := got["large"].chunk.Content
	if !strings.Contains(c, "result truncated to 1000 of ") || !strings.Contains(c, "1 binary parts not kept") {
		t.Fatalf("large result lacks the truncation notes: %q", c[max(0, len(c)-300):])
	}
	if n := got["large"].ret.OutputSize; n > 1300 {
		t.Fatalf("recorded output is %d bytes", n)
	}
	// The event says so too, and keeps the dropped part's description.
	tr := got["large"].ret.Truncated
	if tr == nil || tr.Limit != 1000 || tr.KeptText > 1000 || tr.TextBytes <= 1000 || tr.DroppedParts != 1 {
		t.Fatalf("tool.returned truncated = %+v", tr)
	}
	if a := got["large"].ret.Attachments; len(a) != 1 || a[0].Ref != "" || a[0].Size == 0 {
		t.Fatalf("tool.returned attachments = %+v", a)
	}
	if got["small"].ret.Truncated != nil {
		t.Fatalf("small result marked truncated")
	}
}

// An MCP result carrying a server's secret (its env, marked in the config
// file) is redacted before it is written, like any other payload.
func TestMCPResultSecretsAreRedacted(t *testing.T) {
	const token, code = "tok-mcp-5ecret-123456", "code-mcp-5ecret-987654"
	home := t.TempDir()
	srv := helperServer(t, "exit-on-eof", map[string]string{"SERVICE_TOKEN": token, "WIDGET_CODE": code})
	cfg, _ := json.Marshal(map[string]any{"mcp_servers": map[string]any{
		"calc": map[string]any{"command": srv.Command, "args": srv.Args, "env": srv.Env, "secret_env": []string{"WIDGET_CODE"}},
	}})
	if err := os.WriteFile(filepath.Join(home, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RATH_HOME", home)
	rt := MustOpen(t) // its default secrets come from the config file
	if err := rt.MCP().ConnectConfig(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	tools, err := rt.MCP().Tools(t.Context(), "calc")
	if err != nil {
		t.Fatal(err)
	}
	got := runAgent(t, rt, tools,
		scripted.ToolCall{ID: "c1", Name: "calc__getenv", Arguments: `{"name":"SERVICE_TOKEN"}`},
		scripted.ToolCall{ID: "c2", Name: "calc__getenv", Arguments: `{"name":"WIDGET_CODE"}`})
	if c := got["c1"].chunk.Content; c != `SERVICE_TOKEN="[redacted:mcp.calc.SERVICE_TOKEN]" set=true` {
		t.Fatalf("c1 = %q", c)
	}
	if c := got["c2"].chunk.Content; c != `WIDGET_CODE="[redacted:mcp.calc.WIDGET_CODE]" set=true` {
		t.Fatalf("c2 = %q", c)
	}
	files, _ := filepath.Glob(filepath.Join(rt.Dir(), "rath.db*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte(code)) {
			t.Fatalf("%s holds an MCP server's secret", f)
		}
	}
}
