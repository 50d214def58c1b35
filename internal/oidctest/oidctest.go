package oidctest

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
)

// Provider is a started provider. Its handlers run one at a time, under
// the lock that also guards the clock: the library's own session map
// has none. Safe for concurrent use.
type Provider struct {
	m *mockoidc.MockOIDC

	mu     sync.Mutex // protects following fields and serializes the handlers
	offset time.Duration
	seen   []url.Values
}

// Start starts a provider on 127.0.0.1 whose ID tokens live an hour; the
// test's cleanup stops it.
func Start(tb testing.TB) *Provider {
	tb.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		tb.Fatal(err)
	}
	m.AccessTTL = time.Hour
	p := &Provider{m: m}
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
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Shutdown() })
	return p
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.m.Issuer() }

// ClientID is the one client's id.
func (p *Provider) ClientID() string { return p.m.ClientID }

// ClientSecret is the one client's secret.
func (p *Provider) ClientSecret() string { return p.m.ClientSecret }

// SignsIn queues the user the next authorization signs in, with a
// verified e-mail and the groups claim's values. With none queued the
// provider signs in its default user, whose groups grant no rath role.
func (p *Provider) SignsIn(subject, email string, groups ...string) {
	p.m.QueueUser(&mockoidc.MockUser{Subject: subject, Email: email, EmailVerified: true, Groups: groups})
}

// Now is the clock the provider issues tokens by; give it to the
// console so both agree.
func (p *Provider) Now() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Add(p.offset)
}

// Advance moves the clock forward.
func (p *Provider) Advance(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offset += d
	p.m.FastForward(d)
}

// Forms returns the authorization and token requests' parameters seen so
// far, in order, each with "endpoint" set to the path.
func (p *Provider) Forms() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.seen...)
}

// Authorizations counts the sign-ins the provider was asked for.
func (p *Provider) Authorizations() int {
	n := 0
	for _, f := range p.Forms() {
		if strings.HasSuffix(f.Get("endpoint"), "/authorize") {
			n++
		}
	}
	return n
}
