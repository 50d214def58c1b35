package console_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/console"
)

func TestWrites_NeedTheCSRFValueAndTheSameOrigin(t *testing.T) {
	f := newFixture(t, "")
	cases := map[string]map[string]string{
		"no header":         {},
		"wrong value":       {console.CSRFHeader: strings.Repeat("0", 64)},
		"other origin":      {console.CSRFHeader: f.csrf, "Origin": "http://evil.example"},
		"cross-site":        {console.CSRFHeader: f.csrf, "Sec-Fetch-Site": "cross-site"},
		"same-site, not us": {console.CSRFHeader: f.csrf, "Sec-Fetch-Site": "same-site"},
	}
	for name, h := range cases {
		for _, p := range []string{"/api/verify", "/api/runs/" + f.run + "/replay"} {
			res, body := f.do(t, "POST", p, h)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("%s, POST %s: %s %s", name, p, res.Status, body)
			}
		}
	}
	// A GET on a write endpoint does nothing.
	if res, _ := f.do(t, "GET", "/api/verify", nil); res.StatusCode == http.StatusOK {
		t.Fatalf("GET /api/verify: %s", res.Status)
	}
}

func TestToken_BearerCookieAndRefusals(t *testing.T) {
	const token = "s3cret-token"
	f := newFixture(t, token)
	for name, h := range map[string]map[string]string{
		"none":         {},
		"wrong bearer": {"Authorization": "Bearer nope"},
		"wrong cookie": {"Cookie": console.TokenCookie + "=nope"},
		"basic":        {"Authorization": "Basic " + token},
	} {
		for _, p := range []string{"/", "/app.js", "/api/runs", "/api/runs/" + f.run + "/events", "/api/runs/" + f.run + "/stream"} {
			res, body := f.do(t, "GET", p, h)
			if res.StatusCode != http.StatusUnauthorized || strings.Contains(body, f.run) {
				t.Errorf("%s, GET %s: %s", name, p, res.Status)
			}
		}
	}
	if res, _ := f.do(t, "GET", "/?token=nope", nil); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong ?token=: %s", res.Status)
	}
	// /?token= sets the cookie and sends the browser to /.
	res, _ := f.do(t, "GET", "/?token="+token, nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("?token=: %s to %q", res.Status, res.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == console.TokenCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie: %+v", cookie)
	}
	res, body := f.do(t, "GET", "/api/runs", map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, f.run) {
		t.Fatalf("with the cookie: %s", res.Status)
	}
	// A token does not replace the CSRF check on writes.
	res, _ = f.do(t, "POST", "/api/verify", map[string]string{"Authorization": "Bearer " + token})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("write with the token, without CSRF: %s", res.Status)
	}
	res, _ = f.do(t, "POST", "/api/verify", map[string]string{"Authorization": "Bearer " + token, console.CSRFHeader: f.csrf})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("write with the token and CSRF: %s", res.Status)
	}
	res, _ = f.do(t, "POST", "/api/verify", map[string]string{console.CSRFHeader: f.csrf})
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("write with CSRF, without the token: %s", res.Status)
	}
	// With a token, other host names are allowed (it was served on purpose).
	res, _ = f.do(t, "GET", "/api/runs", map[string]string{"Authorization": "Bearer " + token, "Host": "console.example:7777"})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("other host with the token: %s", res.Status)
	}
}

func TestHost_OnlyLoopbackNamesWithoutAToken(t *testing.T) {
	f := newFixture(t, "")
	for _, host := range []string{"evil.example", "evil.example:7777", "10.0.0.1:7777", "localhost.evil.example"} {
		if res, _ := f.do(t, "GET", "/api/runs", map[string]string{"Host": host}); res.StatusCode != http.StatusForbidden {
			t.Errorf("Host %s: %s", host, res.Status)
		}
	}
	for _, host := range []string{"localhost:7777", "127.0.0.1:7777", "[::1]:7777", "LOCALHOST"} {
		if res, _ := f.do(t, "GET", "/api/runs", map[string]string{"Host": host}); res.StatusCode != http.StatusOK {
			t.Errorf("Host %s: %s", host, res.Status)
		}
	}
}

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7777": true, "localhost:7777": true, "[::1]:0": true, "127.1.2.3:80": true,
		":7777": false, "0.0.0.0:7777": false, "[::]:7777": false, "192.168.1.5:7777": false, "example.com:80": false, "nonsense": false,
	} {
		if got := console.LoopbackAddr(addr); got != want {
			t.Errorf("LoopbackAddr(%q) = %v", addr, got)
		}
	}
}

func TestPage_SecurityHeadersAndNoMarkupFromData(t *testing.T) {
	f := newFixture(t, "")
	for _, p := range []string{"/", "/app.js", "/evals.js", "/app.css", "/api/runs"} {
		res, _ := f.do(t, "GET", p, nil)
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") && !strings.Contains(csp, "style-src 'unsafe-inline'") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, res.Header)
		}
	}
	page := f.get(t, "/", "")
	if strings.Contains(page, "<script>") || strings.Contains(page, "onclick") || strings.Contains(page, "style=") {
		t.Fatal("the page has inline script or style, which the CSP forbids")
	}
	for _, name := range []string{"app.js", "evals.js"} {
		js, err := os.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(js), sink) {
				t.Errorf("%s uses %s: write data with textContent", name, sink)
			}
		}
	}
	if res, _ := f.do(t, "GET", "/../rath.db", nil); res.StatusCode == http.StatusOK {
		t.Fatal("a path outside the console answered")
	}
}
