package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/internal/oidctest"
)

// oidcConfig is the console's configuration for the provider p.
func oidcConfig(p *oidctest.Provider) console.OIDCConfig {
	return console.OIDCConfig{Issuer: p.Issuer(), ClientID: p.ClientID(), ClientSecret: p.ClientSecret(), Now: p.Now}
}

// oidcConsole serves a console over rt that signs users in at p.
func oidcConsole(t testing.TB, rt *rath.Runtime, p *oidctest.Provider) *httptest.Server {
	t.Helper()
	o, err := console.NewOIDC(t.Context(), oidcConfig(p))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := console.New(console.Options{Runtime: rt, OIDC: o, Now: p.Now})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return hs
}

// browser is an HTTP client with a cookie jar that follows redirects,
// as a browser does, and remembers each response on the way.
type browser struct {
	*http.Client
	hops []*http.Response
}

func newBrowser(t testing.TB) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{}
	b.Client = &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		b.hops = append(b.hops, req.Response)
		return nil
	}}
	return b
}
