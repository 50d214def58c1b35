package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/internal/oidctest"
)

// get fetches u with the browser and returns the final response's status
// and body.
func (b *browser) get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	res, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

// signedIn starts a provider and a console over a new store, signs
// alice in with the claim's values and returns the page she sees.
func signedIn(t *testing.T, groups ...string) (*oidctest.Provider, *httptest.Server, *browser, string) {
	t.Helper()
	p := oidctest.Start(t)
	hs := oidcConsole(t, newRuntime(t), p)
	b := newBrowser(t)
	p.SignsIn("u-1", "alice@example.com", groups...)
	res, page := b.get(t, hs.URL+"/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("sign-in: %s\n%s", res.Status, page)
	}
	return p, hs, b, page
}

// TestOIDC_SignInWithPKCE signs a user in over real HTTP against a real
// provider: the API answers 401 naming the sign-in page before, the page
// redirects through the provider with a PKCE S256 challenge, state and
// nonce, the token request carries the verifier, the session cookie is
// HttpOnly and SameSite=Lax and holds no token, and after it the page
// shows who is signed in and the API answers.
func TestOIDC_SignInWithPKCE(t *testing.T) {
	p := oidctest.Start(t)
	rt := newRuntime(t)
	run := startRun(t, rt, "shouter", "hello")
	hs := oidcConsole(t, rt, p)
	b := newBrowser(t)

	res, body := b.get(t, hs.URL+"/api/runs")
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get(console.SignInHeader) != "/auth/login" {
		t.Fatalf("API before sign-in: %s %q: %s", res.Status, res.Header.Get(console.SignInHeader), body)
	}

	p.SignsIn("u-1", "alice@example.com", "engineering", "default:approver", "default:viewer")
	res, body = b.get(t, hs.URL+"/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "alice@example.com · default · approver") {
		t.Fatalf("page after sign-in: %s\n%s", res.Status, body)
	}
	forms := p.Forms()
	// The token request may come twice: x/oauth2 tries the client's
	// secret in a header first, then in the form.
	if len(forms) < 2 {
		t.Fatalf("provider saw %d requests, want authorize and token: %v", len(forms), forms)
	}
	auth, tok := forms[0], forms[len(forms)-1]
	if auth.Get("code_challenge_method") != "S256" || auth.Get("code_challenge") == "" || auth.Get("nonce") == "" ||
		auth.Get("state") == "" || !strings.Contains(auth.Get("scope"), "openid") {
		t.Errorf("authorization request lacks PKCE S256, nonce or state: %v", auth)
	}
	if tok.Get("code_verifier") == "" || tok.Get("grant_type") != "authorization_code" {
		t.Errorf("token request lacks the PKCE verifier: %v", tok)
	}
	var session *http.Cookie
	for _, hop := range b.hops {
		for _, c := range hop.Cookies() {
			if c.Name == console.SessionCookie && c.Value != "" {
				session = c
			}
		}
	}
	if session == nil {
		t.Fatal("no session cookie was set")
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Path != "/" || len(session.Value) != 64 {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Lax, Path=/, a random id", session)
	}
	if exp := time.Until(session.Expires); exp > time.Hour+time.Minute || exp < 50*time.Minute {
		t.Errorf("session cookie expires in %v, want no later than the ID token (an hour)", exp)
	}

	res, body = b.get(t, hs.URL+"/api/runs")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, run) {
		t.Fatalf("API after sign-in: %s\n%s", res.Status, body)
	}
}

// TestOIDC_RefusesWhatItShould: a user whose claim grants no role gets a
// 403 page saying so and no session; a callback whose state this browser
// did not start, or that was used already, is refused; the provider's
// refusal is shown; a next= that names another site lands on /.
func TestOIDC_RefusesWhatItShould(t *testing.T) {
	p := oidctest.Start(t)
	rt := newRuntime(t)
	hs := oidcConsole(t, rt, p)

	t.Run("NoRole", func(t *testing.T) {
		b := newBrowser(t)
		p.SignsIn("u-2", "bob@example.com", "engineering", "acme:superuser", ":viewer", "a b:viewer")
		res, body := b.get(t, hs.URL+"/")
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "bob@example.com is signed in, but the &#34;groups&#34; claim grants no role") {
			t.Fatalf("no role: %s\n%s", res.Status, body)
		}
		if res, _ := b.get(t, hs.URL+"/api/runs"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a user with no role has a session: %s", res.Status)
		}
	})
	t.Run("TenantNotGranted", func(t *testing.T) {
		b := newBrowser(t)
		p.SignsIn("u-3", "carol@example.com", "acme:viewer")
		res, body := b.get(t, hs.URL+"/auth/login?tenant=globex")
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "in tenant globex") {
			t.Fatalf("tenant not granted: %s\n%s", res.Status, body)
		}
	})
	t.Run("ForeignState", func(t *testing.T) {
		// A callback carrying a state another browser began: a login CSRF.
		other := newBrowser(t)
		other.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, _ := other.get(t, hs.URL+"/auth/login")
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil || res.StatusCode != http.StatusFound {
			t.Fatalf("login: %s %v", res.Status, err)
		}
		state := loc.Query().Get("state")
		res, body := newBrowser(t).get(t, hs.URL+"/auth/callback?code=x&state="+url.QueryEscape(state))
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not started in this browser") {
			t.Fatalf("foreign state: %s\n%s", res.Status, body)
		}
	})
	t.Run("ReusedState", func(t *testing.T) {
		b := newBrowser(t)
		p.SignsIn("u-4", "dan@example.com", "default:viewer")
		if res, body := b.get(t, hs.URL+"/"); res.StatusCode != http.StatusOK {
			t.Fatalf("sign-in: %s\n%s", res.Status, body)
		}
		var callback *url.URL
		for _, hop := range b.hops {
			if loc, err := hop.Location(); err == nil && loc.Path == "/auth/callback" {
				callback = loc
			}
		}
		if callback == nil {
			t.Fatal("no redirect to the callback")
		}
		// Replay the callback with the state cookie put back.
		req, _ := http.NewRequest("GET", callback.String(), nil)
		req.AddCookie(&http.Cookie{Name: "rath_oidc_state", Value: callback.Query().Get("state")})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("reused state: %s", res.Status)
		}
	})
	t.Run("ProviderError", func(t *testing.T) {
		res, body := newBrowser(t).get(t, hs.URL+"/auth/callback?error=access_denied&error_description=%3Cscript%3Ex")
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "access_denied &lt;script&gt;x") {
			t.Fatalf("provider error: %s\n%s", res.Status, body)
		}
	})
	t.Run("NextStaysHere", func(t *testing.T) {
		for _, next := range []string{"https://evil.example/", "//evil.example/", "/\\evil.example", "javascript:alert(1)"} {
			b := newBrowser(t)
			p.SignsIn("u-5", "erin@example.com", "default:viewer")
			res, _ := b.get(t, hs.URL+"/auth/login?next="+url.QueryEscape(next))
			if res.StatusCode != http.StatusOK || res.Request.URL.Host != strings.TrimPrefix(hs.URL, "http://") || res.Request.URL.Path != "/" {
				t.Errorf("next=%s landed on %s (%s)", next, res.Request.URL, res.Status)
			}
		}
	})
}

// TestOIDC_SessionEndsWithTheIDToken: when the ID token's hour is over,
// the API answers 401 and a page sends the browser to sign in again,
// which works and comes back to where it was.
func TestOIDC_SessionEndsWithTheIDToken(t *testing.T) {
	p, hs, b, _ := signedIn(t, "default:viewer")
	p.Advance(59 * time.Minute)
	if res, _ := b.get(t, hs.URL+"/api/runs"); res.StatusCode != http.StatusOK {
		t.Fatalf("before the ID token expires: %s", res.Status)
	}
	p.Advance(2 * time.Minute)
	res, body := b.get(t, hs.URL+"/api/runs")
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get(console.SignInHeader) == "" {
		t.Fatalf("after the ID token expired: %s\n%s", res.Status, body)
	}
	before := p.Authorizations()
	p.SignsIn("u-1", "alice@example.com", "default:viewer")
	b.hops = nil
	res, body = b.get(t, hs.URL+"/?view=1")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "alice@example.com") || p.Authorizations() != before+1 {
		t.Fatalf("sign in again: %s, %d authorizations (want %d)\n%s", res.Status, p.Authorizations(), before+1, body)
	}
	if got := res.Request.URL.RequestURI(); got != "/?view=1" {
		t.Errorf("after signing in again the browser is at %s, want /?view=1", got)
	}
}

// TestOIDC_SignOut: signing out needs the page's CSRF value; then the
// session is gone (the old cookie no longer works) and the API answers
// 401.
func TestOIDC_SignOut(t *testing.T) {
	_, hs, b, page := signedIn(t, "default:operator")
	csrf := csrfOf(t, page)
	u, _ := url.Parse(hs.URL)
	var old string
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == console.SessionCookie {
			old = c.Value
		}
	}

	res, err := b.PostForm(hs.URL+"/auth/logout", url.Values{"csrf": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("sign out without the CSRF value: %s", res.Status)
	}
	if res, _ := b.get(t, hs.URL+"/api/runs"); res.StatusCode != http.StatusOK {
		t.Fatalf("a refused sign-out signed out: %s", res.Status)
	}

	res, err = b.PostForm(hs.URL+"/auth/logout", url.Values{"csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "Signed out") {
		t.Fatalf("sign out: %s\n%s", res.Status, body)
	}
	if res, _ := b.get(t, hs.URL+"/api/runs"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API after sign-out: %s", res.Status)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/api/runs", nil)
	req.AddCookie(&http.Cookie{Name: console.SessionCookie, Value: old})
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the signed-out session's cookie still works: %s", res.Status)
	}
}
