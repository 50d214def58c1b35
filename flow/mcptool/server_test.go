package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow/mcptool"
)

// The test binary doubles as a stdio MCP server: with RATH_MCPTOOL_SERVER
// set it serves calcServer on stdin and stdout instead of running tests,
// which lets the tests start real server processes without node.
func TestMain(m *testing.M) {
	if mode := os.Getenv("RATH_MCPTOOL_SERVER"); mode == "freezer" {
		err := freezerServer().Run(context.Background(), &mcp.StdioTransport{})
		fmt.Fprintln(os.Stderr, "freezer server stopped:", err)
		os.Exit(0)
	}
	if mode := os.Getenv("RATH_MCPTOOL_SERVER"); mode != "" {
		err := calcServer().Run(context.Background(), &mcp.StdioTransport{})
		fmt.Fprintln(os.Stderr, "calc server stopped:", err)
		if mode == "ignore-eof" {
			// Like the reference "everything" server: stay up after stdin
			// closes, until a signal ends the process.
			select {}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type envIn struct {
	Name string `json:"name"`
}

// calcServer is an in-process MCP server with tools covering what the
// wrapper must handle: typed tools, a failing one, binary content, a
// read-only hint, a name model APIs reject, and a draft-07 raw schema.
func calcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d + %d = %d", in.A, in.B, in.A+in.B)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is on fire")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pixel", Description: "Returns a tiny image."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "one pixel:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG-not-really")},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "math.mul", Description: "Multiply."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A * in.B)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Read an environment variable of the server."},
		func(ctx context.Context, req *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s=%q set=%v", in.Name, v, ok)}}}, nil, nil
		})
	// A raw draft-07 schema, as servers written with other SDKs send.
	s.AddTool(&mcp.Tool{Name: "shout", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"properties":{"text":{"type":"string","minLength":1}},"required":["text"],"additionalProperties":false}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{StructuredContent: map[string]string{"shouted": in.Text + "!"}}, nil
		})
	return s
}

// connectInMemory connects a fresh calcServer to m as name and returns the
// server side, whose Close makes the server go away.
func connectInMemory(t *testing.T, m *mcptool.Manager, name string) *mcp.ServerSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := calcServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	if err := m.ConnectTransport(t.Context(), name, ct); err != nil {
		t.Fatal(err)
	}
	return ss
}

// newPair returns in-memory transports with nothing behind them, for
// connections refused before they are made.
func newPair(t *testing.T) (*mcp.InMemoryTransport, *mcp.InMemoryTransport) {
	t.Helper()
	return mcp.NewInMemoryTransports()
}
