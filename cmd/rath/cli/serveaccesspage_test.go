//go:build integration

package cli

import (
	"context"
	"net/http"
	execpkg "os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
)

// The run page of rath serve --auth tokens on PostgreSQL, in Chromium:
// an admin of the run's tenant sees who read the run (a viewer's read
// through the API, and one a program recorded for an identity with a
// hostile name, shown as text); a viewer's page has no such panel and
// never asks for it.
func TestServe_RunPageWhoReadInChromium(t *testing.T) {
	t.Parallel()
	exe := ""
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := execpkg.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Fatal("chromium is not installed; this test needs it: apt-get update && apt-get install -y chromium (make deps does this)")
	}
	st := newTokensStore(t, "postgres")
	run, _ := st.waitingRun("acme")
	viewer, admin := st.token("--tenant", "acme", "--role", "viewer"), st.token("--tenant", "acme", "--role", "admin")
	st.serve()
	if code, body := st.do("GET", "/api/sessions/"+run, viewer.Secret, ""); code != http.StatusOK {
		t.Fatalf("the viewer reads the transcript: %d %s", code, body)
	}
	// A program on the store records a read by an identity it signed in
	// (an OIDC subject is whatever the provider says).
	hostile := `<img src=x onerror="document.title='pwned'">` + "\u202e\x1b[31m"
	i := slices.Index(st.store, "--dsn")
	rt, err := rath.OpenWith(t.Context(), rath.Options{Dir: st.store[slices.Index(st.store, "--dir")+1], DSN: st.store[i+1]})
	if err != nil {
		t.Fatal(err)
	}
	err = access.Record(t.Context(), rt, access.Identity{Subject: hostile, Issuer: "https://id.example", Tenant: "acme", Role: access.Viewer},
		access.Viewed{Run: run, What: events.ViewedEvents, FromSeq: 1, ToSeq: 2, Route: "GET /api/runs/{id}/events"}, time.Now())
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return s
	}
	// Signing in with ?token= sets the cookie the page's requests carry.
	open := func(tok string) {
		t.Helper()
		step("open the run page", chromedp.Navigate(st.base+"?token="+tok), chromedp.WaitVisible(chromedp.ID("nav-runs")),
			chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/`+run+`"`), chromedp.WaitVisible(chromedp.CSS(`#events-body tr`)))
	}

	open(admin.Secret)
	step("who read", chromedp.WaitVisible(chromedp.ID("access-records")))
	who := eval(`Array.from(document.querySelectorAll('#access-records tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent).join(" | ")).join("\n")`)
	for _, want := range []string{
		"token:" + viewer.ID + access.IssuerToken + " | acme | transcript",
		"GET /api/sessions/{id}",
		`<img src=x onerror="document.title='pwned'">\u202e\x1b[31mhttps://id.example | acme | events seq 1–2`,
	} {
		if !strings.Contains(who, want) {
			t.Errorf("the admin's panel lacks %q:\n%s", want, who)
		}
	}
	if n := eval(`String(document.querySelectorAll('#access img').length) + document.title`); n != "0rath console" {
		t.Errorf("the hostile name became markup: %s", n)
	}

	open(viewer.Secret)
	// The page has loaded what it loads (the tool calls come with the
	// events' first page); it never asked who read the run.
	step("viewer's page", chromedp.WaitVisible(chromedp.CSS(`#tools .toolcall-box`)))
	if got := eval(`[document.querySelector('#access') ? "panel" : "", document.body.textContent.includes("Who read") ? "heading" : "",
		performance.getEntriesByType("resource").some(e => e.name.includes("/access")) ? "request" : ""].join("")`); got != "" {
		t.Errorf("a viewer's run page shows or asks who read it: %s", got)
	}
}
