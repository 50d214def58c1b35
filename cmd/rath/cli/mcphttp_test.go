package cli

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/events"
)

// TestMCP_HTTPServerRestart restarts a streamable HTTP server while a run
// is in one of its calls: that call fails, and the run
// goes on, the next call reconnecting to the new server, which knows none
// of the old sessions.
func TestMCP_HTTPServerRestart(t *testing.T) {
	entered := make(chan struct{}, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "restarts", Version: "1.0.0"}, nil)
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Wait until the server stops."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Answer pong."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	serve := func(l net.Listener) *http.Server {
		srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
		go srv.Serve(l)
		return srv
	}
	srv := serve(l)
	t.Cleanup(func() { srv.Close() })

	withMCPConfig(t, map[string]any{"web": map[string]any{"url": "http://" + addr + "/mcp", "call_timeout": "2s"}})
	dir := t.TempDir()
	cas := writeCassette(t, "still here", `c1:web__ping:{}`, `c2:web__block:{}`, `c3:web__ping:{}`)
	type result struct {
		got  map[string]events.ToolReturned
		end  runEnd
		code int
		out  string
		err  error
	}
	done := make(chan result, 1)
	go func() { // the run blocks in a call until the server restarts
		r := rathCLI(t, dir, "run", "--json", "--cassette", cas, "go")
		got, end, err := parseToolReturns(r.stdout)
		done <- result{got, end, r.code, r.stdout + r.stderr, err}
	}()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the run never called block")
	}
	srv.Close()
	if l, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	srv = serve(l)
	r := <-done
	if r.code != 0 || r.err != nil || r.end.Status != "done" {
		t.Fatalf("run: exit %d, %v, %+v\n%s", r.code, r.err, r.end, r.out)
	}
	if r.got["c1"].ErrorKind != "" || r.got["c3"].ErrorKind != "" {
		t.Fatalf("ping failed: %+v", r.got)
	}
	// The call cut by the restart fails: at once when the SDK's event
	// stream notices first and closes the connection, else at its timeout
	// (the SDK cannot tell a response stream cut before its first event
	// from a slow one).
	if k := r.got["c2"].ErrorKind; (k != "timeout" && k != "mcp_server_gone") || !strings.Contains(r.got["c2"].Error, "web") {
		t.Errorf("the call cut by the restart: %+v", r.got["c2"])
	}
}
