//go:build integration

package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/internal/oidctest"
)

// TestConsole_OIDCSignInChromium signs in through headless Chromium
// against a real OpenID Connect provider on loopback: the console sends
// the browser to the provider and back (code flow with PKCE) and shows
// the runs as the signed-in user; Sign out ends the session and another
// user signs in; when the ID token expires the page sends the browser to
// sign in again, and it comes back where it was; a user whose groups
// grant no role sees a page saying so. One browser, one provider, about
// 10 s.
func TestConsole_OIDCSignInChromium(t *testing.T) {
	rt := newRuntime(t)
	finished := startRun(t, rt, "shouter", "Shout "+hostile)
	prov := oidctest.Start(t)
	o, err := console.NewOIDC(t.Context(), oidcConfig(prov))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := console.New(console.Options{Runtime: rt, OIDC: o, Now: prov.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := openPage(t, srv)
	start := time.Now()
	runsShown := until(`!!document.querySelector('#runs-body tr[data-run="` + finished + `"]')`)

	prov.SignsIn("u-1", "vera@example.com", "default:viewer")
	p.step("sign in as a viewer",
		chromedp.Navigate(p.url+"/#/runs"),
		runsShown,
		until(`document.getElementById('who').textContent === "vera@example.com · default · viewer"`),
		p.shot("serve-oidc-signed-in.png"),
	)
	if got := p.text(`location.hash`); got != "#/runs" {
		t.Errorf("after signing in the page is at %q, want #/runs", got)
	}

	// await evaluates an expression whose value is a promise.
	await := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}

	p.step("sign out",
		chromedp.Click(chromedp.ID("sign-out")),
		until(`!!document.getElementById('auth-title') && document.getElementById('auth-title').textContent === "Signed out"`),
	)
	if got := await(`fetch('/api/runs').then(r => String(r.status))`); got != "401" {
		t.Fatalf("the API after signing out: %s, want 401", got)
	}

	before := prov.Authorizations()
	prov.SignsIn("u-2", "ann@example.com", "default:approver", "engineering")
	p.step("sign in again as another user",
		chromedp.Click(chromedp.ID("sign-in")),
		runsShown,
		until(`document.getElementById('who').textContent === "ann@example.com · default · approver"`),
	)

	// The ID token lives an hour: past it, the page's next request is
	// refused and the page goes to sign in, and comes back signed in.
	prov.SignsIn("u-2", "ann@example.com", "default:approver")
	prov.Advance(61 * time.Minute)
	p.step("expired: signed in again",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/`+finished+`"`),
		asked(prov, before+2),
		until(`!!document.getElementById('who') && document.getElementById('who').textContent.startsWith("ann@example.com") && location.hash === "#/run/`+finished+`"`),
	)
	if got := prov.Authorizations(); got != before+2 {
		t.Fatalf("the provider was asked %d times after the viewer's sign-in, want 2 (the approver, then after expiry)", got-before)
	}

	p.step("sign out again", chromedp.Click(chromedp.ID("sign-out")), until(`!!document.getElementById('sign-in')`))
	// No value of the groups claim grants a role (the provider's default
	// user has two other groups).
	p.step("no role",
		chromedp.Click(chromedp.ID("sign-in")),
		until(`!!document.getElementById('auth-title') && document.getElementById('auth-title').textContent === "No role in rath"`),
		p.shot("serve-oidc-no-role.png"),
	)
	if msg := p.text(`document.getElementById('auth-message').textContent`); !strings.Contains(msg, "grants no role in rath") {
		t.Errorf("the no-role page says %q", msg)
	}
	t.Logf("signed in, out and in again in %v", time.Since(start).Round(time.Millisecond))
}

// asked waits until the provider has been asked for n sign-ins.
func asked(prov *oidctest.Provider, n int) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		for prov.Authorizations() < n {
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for sign-in %d at the provider: %w", n, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
		return chromedp.Void{}, nil
	}
}
