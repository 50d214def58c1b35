package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model/scripted"
)

// A Manager holds the connection to an MCP server (here one built with the
// same SDK, over an in-memory transport; ConnectServer starts a stdio
// one) and hands its tools to an agent.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	clientT, serverT := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}

	m := mcptool.NewManager()
	defer m.Close()
	if err := m.ConnectTransport(ctx, "greeter", clientT); err != nil {
		log.Fatal(err)
	}
	tools, err := m.Tools(ctx, "greeter")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tools[0].Name(), string(tools[0].Schema()))

	dir, err := os.MkdirTemp("", "rath-mcp-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	model := scripted.New(
		scripted.Entry{ToolCalls: []scripted.ToolCall{
			{ID: "1", Name: "greeter__greet", Arguments: `{"name":"Ada"}`},
			{ID: "2", Name: "greeter__greet", Arguments: `{"nom":"Ada"}`},
		}},
		scripted.Entry{Content: "Greeted."},
	)
	p, err := flow.ResolveProvider(flow.Provider{Client: model, Model: "scripted"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: dir + "/none.json"})
	if err != nil {
		log.Fatal(err)
	}
	agent, err := flow.NewAgent("Greet people.", p, flow.WithTools(tools...))
	if err != nil {
		log.Fatal(err)
	}
	s, err := rt.NewUserSession(ctx, "Greet Ada.")
	if err != nil {
		log.Fatal(err)
	}
	out, err := agent.Forward(ctx, s)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range out.Chunks() {
		if c.Role == events.RoleToolResult {
			fmt.Printf("%s: %.60s\n", c.ToolCallID, c.Content)
		}
	}
	// Output:
	// greeter__greet {"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}
	// 1: Hello, Ada!
	// 2: error (schema_violation): arguments do not match the schema
}

// ParseFlag reads the CLI's --mcp form: a URL is an HTTP server
// (streamable HTTP, or SSE with the sse+ prefix), anything else a command.
func ExampleParseFlag() {
	for _, f := range []string{"docs=https://mcp.example.com/mcp", "old=sse+http://127.0.0.1:3001/sse", "fs=npx -y server-filesystem /srv"} {
		name, srv, err := mcptool.ParseFlag(f)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: type=%q url=%q command=%q args=%q\n", name, srv.Type, srv.URL, srv.Command, srv.Args)
	}
	// Output:
	// docs: type="http" url="https://mcp.example.com/mcp" command="" args=[]
	// old: type="sse" url="http://127.0.0.1:3001/sse" command="" args=[]
	// fs: type="" url="" command="npx" args=["-y" "server-filesystem" "/srv"]
}

// Recorded rebuilds tools from their specs, for a replay that answers the
// calls from the log: the model is offered the same tools, with no server.
func ExampleRecorded() {
	tools := mcptool.Recorded([]mcptool.Spec{{Name: "docs__search", Description: "Search the docs.",
		Schema: []byte(`{"type":"object"}`), Server: "docs", Remote: "search",
		Annotations: flow.ToolAnnotations{ReadOnly: true}}})
	_, err := tools[0].Call(context.Background(), nil, nil)
	fmt.Println(tools[0].Name(), flow.AnnotationsOf(tools[0]).ReadOnly, err)
	// Output:
	// docs__search true mcp_server_gone: mcptool: this tool was rebuilt from a record for a replay and has no server to call
}

// A configured HTTP server that redirects elsewhere does not get its
// token sent there: the connect fails with a *CrossOriginError.
func ExampleCrossOriginError() {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	configured := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer configured.Close()
	m := mcptool.NewManager()
	defer m.Close()
	err := m.ConnectServer(context.Background(), "docs", mcptool.Server{URL: configured.URL, Headers: map[string]string{"Authorization": "Bearer tok-0123456789"}})
	var ce *mcptool.CrossOriginError
	fmt.Println(errors.As(err, &ce), errors.Is(err, mcptool.ErrCrossOrigin))
	// Output: true true
}
