package mcptool_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
)

// httpServer serves calcServer over HTTP on a loopback port it can stop
// and start again, as a restarted server would be.
type httpServer struct {
	t      *testing.T
	addr   string
	sse    bool
	auth   string       // the Authorization header requests must carry
	denied atomic.Int32 // requests refused for a wrong header
	srv    *http.Server
}

func newHTTPServer(t *testing.T, sse bool, auth string) *httpServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &httpServer{t: t, addr: l.Addr().String(), sse: sse, auth: auth}
	h.serve(l)
	t.Cleanup(h.stop)
	return h
}

func (h *httpServer) url() string {
	if h.sse {
		return "http://" + h.addr + "/sse"
	}
	return "http://" + h.addr + "/mcp"
}

func (h *httpServer) serve(l net.Listener) {
	get := func(*http.Request) *mcp.Server { return calcServer() }
	var mcpH http.Handler = mcp.NewStreamableHTTPHandler(get, nil)
	if h.sse {
		mcpH = mcp.NewSSEHandler(get, nil)
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != h.auth {
			h.denied.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	})}
	go h.srv.Serve(l)
}

// stop ends the server and every connection to it.
func (h *httpServer) stop() {
	if h.srv != nil {
		h.srv.Close()
		h.srv = nil
	}
}

// restart stops the server and serves again on the same address: the
// new server knows none of the old sessions.
func (h *httpServer) restart() {
	h.t.Helper()
	h.stop()
	var l net.Listener
	var err error
	for range 50 { // the port is free again at once on Linux; be patient elsewhere
		if l, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.serve(l)
}

func TestManager_HTTP(t *testing.T) {
	t.Setenv("RATH_TEST_MCP_TOKEN", "tok-123")
	for _, sse := range []bool{false, true} {
		name := map[bool]string{false: "streamable", true: "sse"}[sse]
		t.Run(name, func(t *testing.T) {
			h := newHTTPServer(t, sse, "Bearer tok-123")
			srv := mcptool.Server{URL: h.url(), Headers: map[string]string{"Authorization": "Bearer ${RATH_TEST_MCP_TOKEN}"}}
			if sse {
				srv.Type = mcptool.TransportSSE
			}
			m := MustManager(t, mcptool.Options{})
			if err := m.ConnectServer(t.Context(), "calc", srv); err != nil {
				t.Fatal(err)
			}
			if h.denied.Load() != 0 {
				t.Fatalf("%d requests without the token", h.denied.Load())
			}
			tools := mustTools(t, m, "calc")
			add := findTool(t, tools, "calc__add")
			if a := flow.AnnotationsOf(add); !a.ReadOnly {
				t.Errorf("annotations of add: %+v", a)
			}
			call := func(tool flow.Tool) (string, error) {
				res, err := tool.Call(t.Context(), nil, []byte(`{"a":2,"b":3}`))
				return res.Content, err
			}
			if got, err := call(add); err != nil || got != "2 + 3 = 5" {
				t.Fatalf("add: %q %v", got, err)
			}

			// The server restarts: the read-only tool's call reconnects
			// and succeeds; the run needs no restart.
			h.restart()
			if got, err := call(add); err != nil || got != "2 + 3 = 5" {
				t.Fatalf("add after a restart: %q %v", got, err)
			}
			// Stopped: the health check fails, a call gets a typed error
			// naming the server, and all is back once the server is.
			h.stop()
			if err := m.Ping(t.Context(), "calc"); err == nil {
				t.Fatal("ping of a stopped server succeeded")
			}
			mul := findTool(t, tools, "calc__math_mul")
			_, err := call(mul)
			var te *flow.ToolError
			if !errors.As(err, &te) || te.Kind != mcptool.KindServerGone || !strings.Contains(err.Error(), "calc") {
				t.Fatalf("call to a stopped server: %v", err)
			}
			h.restart()
			// Not annotated: retried only because the refused connection
			// proves nothing was sent.
			if got, err := call(mul); err != nil || got != "6" {
				t.Fatalf("mul after the server came back: %q %v", got, err)
			}
			h.restart()
			if err := m.Ping(t.Context(), "calc"); err != nil {
				t.Fatalf("ping after a restart: %v", err)
			}
		})
	}
}

func TestManager_HTTPHeaderMissing(t *testing.T) {
	h := newHTTPServer(t, false, "Bearer right")
	m := MustManager(t, mcptool.Options{})
	err := m.ConnectServer(t.Context(), "calc", mcptool.Server{URL: h.url(), HeadersEnv: map[string]string{"Authorization": "RATH_TEST_UNSET_TOKEN"}})
	if err == nil || h.denied.Load() == 0 {
		t.Fatalf("connected without the token: %v", err)
	}
}

func TestServerSecrets(t *testing.T) {
	env := map[string]string{"TOK": "s3cret", "ORG": "acme"}
	srv := mcptool.Server{URL: "http://127.0.0.1:1/mcp",
		Headers:    map[string]string{"Authorization": "Bearer ${TOK}", "X-Org": "${ORG}", "Accept": "application/json"},
		HeadersEnv: map[string]string{"X-Api-Key": "TOK"}}
	var got []string
	for _, s := range srv.Secrets("h", func(k string) string { return env[k] }) {
		got = append(got, s.Name+"="+s.Value)
	}
	want := "mcp.h.header.X-Api-Key=s3cret mcp.h.header.Authorization=Bearer s3cret mcp.h.header.X-Org.ORG=acme"
	if strings.Join(got, " ") != want {
		t.Errorf("secrets %q, want %q", strings.Join(got, " "), want)
	}
}

// A database MCP server takes its connection string as an argument or in
// its environment; the password in it is a secret.
func TestServerSecrets_ConnectionStrings(t *testing.T) {
	srv := mcptool.Server{Command: "mcp-server-postgres", Args: []string{"--read-only", "postgresql://app:arg-pw-123@db/app"},
		Env: map[string]string{"DATABASE_URL": "postgres://app:env-pw-456@db/app", "PGHOST": "db"}}
	var got []string
	for _, s := range srv.Secrets("pg", func(string) string { return "" }) {
		got = append(got, s.Name+"="+s.Value)
	}
	want := "mcp.pg.DATABASE_URL.password=app:env-pw-456@ mcp.pg.DATABASE_URL.password=env-pw-456 mcp.pg.arg1.password=app:arg-pw-123@ mcp.pg.arg1.password=arg-pw-123"
	if strings.Join(got, " ") != want {
		t.Errorf("secrets %q, want %q", strings.Join(got, " "), want)
	}
}

func findTool(t *testing.T, tools []flow.Tool, name string) flow.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}
