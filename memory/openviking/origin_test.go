package openviking_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/memory/openviking"
)

// A server that redirects the client elsewhere never gets the key sent
// there: not to another host (x-api-key went anywhere), not to another
// port of the same host (Go keeps Authorization for the same host name
// whatever the port), not to another scheme. The client refuses with a
// typed error; a redirect within the origin is followed, key and all.
func TestClient_KeyNeverFollowsARedirectToAnotherOrigin(t *testing.T) {
	for _, header := range []string{"bearer", "x-api-key"} {
		t.Run(header, func(t *testing.T) {
			var leaked atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.Header.Get("Authorization")+r.Header.Get("X-API-Key"), key) {
					leaked.Add(1)
				}
				ok(w, map[string]any{})
			}))
			defer other.Close()
			var sameOrigin atomic.Int32
			configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/health": // another port of 127.0.0.1
					http.Redirect(w, r, other.URL+"/health", http.StatusTemporaryRedirect)
				case "/api/v1/sessions": // 127.0.0.1 and localhost: another host
					http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/api/v1/sessions", http.StatusTemporaryRedirect)
				case "/api/v1/search/find": // within the origin
					http.Redirect(w, r, "/api/v1/search/found", http.StatusTemporaryRedirect)
				case "/api/v1/search/found":
					if strings.Contains(r.Header.Get("Authorization")+r.Header.Get("X-API-Key"), key) {
						sameOrigin.Add(1)
					}
					ok(w, map[string]any{"total": 0})
				}
			}))
			defer configured.Close()
			c := newClient(t, configured.URL, openviking.Options{APIKey: key, KeyHeader: header})
			ctx := context.Background()
			err := c.Health(ctx)
			var ce *openviking.CrossOriginError
			if !errors.As(err, &ce) || !errors.Is(err, openviking.ErrCrossOrigin) || ce.URL != other.URL+"/health" {
				t.Fatalf("another port: %v", err)
			}
			if _, err := c.CreateSession(ctx); !errors.Is(err, openviking.ErrCrossOrigin) {
				t.Fatalf("another host: %v", err)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("the error shows the key: %v", err)
			}
			if n := leaked.Load(); n != 0 {
				t.Fatalf("the key reached the other server %d times", n)
			}
			if _, err := c.Find(ctx, openviking.FindRequest{Query: "q"}); err != nil {
				t.Fatalf("same-origin redirect: %v", err)
			}
			if sameOrigin.Load() != 1 {
				t.Fatal("the same-origin redirect lost the key")
			}
		})
	}
}
