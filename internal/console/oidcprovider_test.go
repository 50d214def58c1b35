package console_test

import (
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/console"
)

// provider is a real OpenID Connect provider on loopback
// (github.com/oauth2-proxy/mockoidc: discovery, JWKS, the authorization
// code flow with PKCE S256, RS256 ID tokens) which signs in the users
// queued with signsIn, without a login form. Its handlers run one at a
// time under mu, which also guards the shared clock: the library's own
// session map has no lock.
type provider struct {
	m *mockoidc.MockOIDC

	mu     sync.Mutex // protects following fields and serializes the handlers
	offset time.Duration
	// seen are the authorization and token requests' forms, in order.
	seen []url.Values
}

// startProvider starts the provider; its ID tokens live an hour.
func startProvider(t testing.TB) *provider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.AccessTTL = time.Hour
	p := &provider{m: m}
	err = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if strings.HasSuffix(r.URL.Path, "/authorize") || strings.HasSuffix(r.URL.Path, "/token") {
				r.ParseForm()
				f := url.Values{"endpoint": {r.URL.Path}}
				for k, v := range r.Form {
					f[k] = v
				}
				p.seen = append(p.seen, f)
			}
			next.ServeHTTP(w, r)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return p
}

// signsIn queues the user the next authorization signs in.
func (p *provider) signsIn(subject, email string, groups ...string) {
	p.m.QueueUser(&mockoidc.MockUser{Subject: subject, Email: email, EmailVerified: true, Groups: groups})
}

// now is the clock the provider and the console share.
func (p *provider) now() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Add(p.offset)
}

// advance moves the shared clock forward.
func (p *provider) advance(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offset += d
	p.m.FastForward(d)
}

// forms returns the authorization and token requests seen so far.
func (p *provider) forms() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.seen...)
}

// authorizations counts the sign-ins the provider was asked for.
func (p *provider) authorizations() int {
	n := 0
	for _, f := range p.forms() {
		if strings.HasSuffix(f.Get("endpoint"), "/authorize") {
			n++
		}
	}
	return n
}

// config is the console's OIDC configuration for this provider.
func (p *provider) config() console.OIDCConfig {
	return console.OIDCConfig{Issuer: p.m.Issuer(), ClientID: p.m.ClientID, ClientSecret: p.m.ClientSecret, Now: p.now}
}

// oidcConsole serves a console over rt that signs users in at p.
func oidcConsole(t testing.TB, rt *rath.Runtime, p *provider) *httptest.Server {
	t.Helper()
	o, err := console.NewOIDC(t.Context(), p.config())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := console.New(console.Options{Runtime: rt, OIDC: o, Now: p.now})
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
