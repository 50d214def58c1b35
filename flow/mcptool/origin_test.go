package mcptool_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow/mcptool"
)

// sink is another origin: it records the credentials requests bring.
type sink struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // the Authorization and X-Api-Key of each request
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		s.mu.Unlock()
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) sawToken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.seen {
		if h != "|" {
			return true
		}
	}
	return false
}

// A configured server that points its client elsewhere — a 307 for the
// streamable transport, an endpoint event on another host for the legacy
// SSE one — does not get the credentials sent there: the connect fails
// with a *CrossOriginError and the other server never sees the token.
func TestManager_HTTPCredentialsStayWithTheirOrigin(t *testing.T) {
	t.Setenv("RATH_TEST_MCP_KEY", "key-very-secret")
	for _, tc := range []struct {
		name string
		sse  bool
		// serve is the configured server, pointing at other.
		serve func(other string) http.HandlerFunc
	}{
		{"redirect", false, func(other string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other+"/mcp", http.StatusTemporaryRedirect)
			}
		}},
		{"sse endpoint", true, func(other string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", other)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		}},
		{"sse redirect", true, func(other string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other+"/sse", http.StatusTemporaryRedirect)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := newSink(t)
			configured := httptest.NewServer(tc.serve(other.URL))
			t.Cleanup(configured.Close)
			srv := mcptool.Server{URL: configured.URL + "/mcp",
				Headers:    map[string]string{"Authorization": "Bearer tok-very-secret"},
				HeadersEnv: map[string]string{"X-Api-Key": "RATH_TEST_MCP_KEY"}}
			if tc.sse {
				srv.Type = mcptool.TransportSSE
			}
			m := MustManager(t, mcptool.Options{})
			err := m.ConnectServer(t.Context(), "calc", srv)
			if other.sawToken() {
				t.Fatalf("the other origin received the credentials: %q", other.seen)
			}
			var ce *mcptool.CrossOriginError
			if !errors.As(err, &ce) || !errors.Is(err, mcptool.ErrCrossOrigin) {
				t.Fatalf("connect: %v, want a *CrossOriginError", err)
			}
			if ce.Server != srv.URL || ce.URL[:len(other.URL)] != other.URL {
				t.Errorf("error names %q and %q, want %q and %s…", ce.Server, ce.URL, srv.URL, other.URL)
			}
		})
	}
}

// A redirect within the configured origin is followed, credentials and
// all: the guard is about where they go, not about redirects.
func TestManager_HTTPSameOriginRedirect(t *testing.T) {
	api := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return calcServer() }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		api.ServeHTTP(w, r)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	m := MustManager(t, mcptool.Options{})
	if err := m.ConnectServer(t.Context(), "calc", mcptool.Server{URL: s.URL + "/old", Headers: map[string]string{"Authorization": "Bearer tok"}}); err != nil {
		t.Fatal(err)
	}
	mustTools(t, m, "calc")
}
