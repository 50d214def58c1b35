package openviking_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/gorath/rath/memory/openviking"
)

// Find against a server that answers as OpenViking documents it, and a
// failure matched by its sentinel.
func ExampleClient_Find() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer my-key" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"status": "error", "error": {"code": "UNAUTHENTICATED", "message": "missing key"}}`)
			return
		}
		io.WriteString(w, `{"status": "ok", "result": {"memories": [{"uri": "viking://user/alice/memories/prefs.md",
			"context_type": "memory", "level": 2, "abstract": "alice prefers short answers", "score": 0.9}], "total": 1}}`)
	}))
	defer srv.Close()
	ctx := context.Background()

	c, _ := openviking.New(openviking.Options{URL: srv.URL, APIKey: "my-key"})
	res, err := c.Find(ctx, openviking.FindRequest{Query: "how should answers look", TargetURI: "viking://user/alice/memories/"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range res.Memories {
		fmt.Printf("%.1f %s: %s\n", m.Score, m.URI, m.Abstract)
	}

	anon, _ := openviking.New(openviking.Options{URL: srv.URL})
	_, err = anon.Find(ctx, openviking.FindRequest{Query: "anything"})
	fmt.Println(errors.Is(err, openviking.ErrUnauthenticated))
	// Output:
	// 0.9 viking://user/alice/memories/prefs.md: alice prefers short answers
	// true
}

// The home alias names the caller's own user root; ForUser gives the URI
// the server answers with for that caller.
func ExampleURI_ForUser() {
	u, err := openviking.ParseURI("viking://~/memories/preferences/")
	if err != nil {
		panic(err)
	}
	fmt.Println(u.Home(), u.ForUser("alice"))
	// Output: true viking://user/alice/memories/preferences/
}
