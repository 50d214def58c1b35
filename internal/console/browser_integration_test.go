//go:build integration

package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/replay"
)

// chromium finds Debian's chromium. The test fails, not skips, without
// it: `make test` installs it (apt-get install -y chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed; the console browser test needs it: apt-get update && apt-get install -y chromium (make deps does this)")
	return ""
}

// until polls a JavaScript condition in the page until it is true. A
// poll that lands while the page navigates (signing in or out goes
// through the identity provider and back) polls again.
func until(cond string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for {
			ok, err := chromedp.Evaluate[bool](cond)(ctx, tg)
			if err != nil && !navigating(err) {
				return chromedp.Void{}, err
			}
			if ok {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for %s: %w", cond, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// navigating reports whether err is DevTools saying that the page the
// expression was sent to went away: it navigated, and its next document
// answers the next poll.
func navigating(err error) bool {
	msg := err.Error()
	for _, m := range []string{"Inspected target navigated or closed", "Cannot find context with specified id", "Execution context was destroyed"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// TestConsole_InChromium drives the console in headless Chromium: the
// runs list (a new run appears without a reload), a run's page, a click
// on a graph node opening the transcript (hostile text shown as text),
// the live tail of a running run, and the replay verdict. Screenshots go
// to $RATH_SERVE_SHOTS if set, else to a temporary directory.
func TestConsole_InChromium(t *testing.T) {
	exe := chromium(t)
	shots := os.Getenv("RATH_SERVE_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	rt := newRuntime(t)
	finished := startRun(t, rt, "shouter", "Shout "+hostile)
	out := outputOf(t, rt, finished)

	// A run that waits at a gate until the test opens it.
	g := &gate{open: make(chan struct{})}
	in, err := rt.NewUserSession(t.Context(), "wait for me")
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() {
		_, err := rt.Start(context.Background(), "gated", g, in, rath.WithRunID("run-gated"))
		runDone <- err
	}()
	t.Cleanup(func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
		<-runDone
	})
	waitFor(t, func() bool {
		v, err := rt.Store().ReadRun(t.Context(), "run-gated")
		return err == nil && len(v) > 0 && strings.Contains(string(v[len(v)-1].Payload), "waiting at the gate")
	})

	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv) // 127.0.0.1:0
	t.Cleanup(func() { srv.Close(); hs.Close() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			p := filepath.Join(shots, name)
			t.Logf("screenshot %s (%d bytes)", p, len(png))
			return chromedp.Void{}, os.WriteFile(p, png, 0o644)
		}
	}
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	eval := func(expr string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return n
	}

	step("runs list",
		chromedp.Navigate(hs.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#runs-body tr[data-run="`+finished+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs-body tr[data-run="run-gated"]`)),
		until(`document.querySelector('#runs-body tr[data-run="run-gated"] .status').textContent === "running"`),
	)
	// A run recorded now appears without a reload (the list polls).
	another := startRun(t, rt, "shouter", "one more")
	step("new run appears", chromedp.WaitVisible(chromedp.CSS(`#runs-body tr[data-run="`+another+`"]`)), shot("serve-runs.png"))

	step("run page",
		chromedp.Click(chromedp.CSS(`#runs-body tr[data-run="`+finished+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#events-body tr`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.graph g.node[data-session="`+out+`"]`)),
		until(`document.querySelector('#run-status').textContent === "done"`),
		until(`document.querySelector('#tools .toolcall-box') !== null && document.querySelector('#tools').textContent.includes('shout (c1)')`),
		// Every section has loaded: the graph's nodes stay where the
		// click below aims.
		until(`!document.querySelector('main').textContent.includes("Loading")`),
		shot("serve-run.png"),
	)
	if scripts := eval(`document.querySelectorAll("body script").length`); scripts != 0 {
		t.Fatalf("%d script elements: log text became markup", scripts)
	}

	step("graph node opens the transcript",
		chromedp.Click(chromedp.CSS(`svg.graph g.node[data-session="`+out+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript .chunk`)),
		shot("serve-session.png"),
	)
	transcript, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#transcript`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(transcript, "Done. <script>alert(1)</script> \\x1b[31mred\\x1b[0m") || !strings.Contains(transcript, "→ call c1 shout") {
		t.Fatalf("transcript text:\n%s", transcript)
	}

	// A person approves a pending tool call in the inbox; a worker (here
	// the test, with replay.Resume) continues the run, and its live tail
	// shows the approved call running and the run ending.
	gated := func() *flow.Agent { return newAgent(t, flow.WithApproval("shout", flow.Always())) }
	ain, err := rt.NewUserSession(t.Context(), "Shout after approval")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(t.Context(), "gated-shouter", gated(), ain, rath.WithRunID("run-approve")); !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v, want the run waiting", err)
	}
	step("approvals inbox",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/approvals"`),
		chromedp.WaitVisible(chromedp.CSS(`#approvals .approval`)),
		until(`document.querySelector('#approvals .approval').textContent.includes("run-approve")`),
		shot("serve-approvals.png"),
		chromedp.Click(chromedp.CSS(`#approvals .approval .approve`)),
		until(`document.querySelector('#approvals').textContent.includes("approved by os:")`),
	)
	step("the approved run's live tail",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/run-approve"`),
		chromedp.WaitVisible(chromedp.CSS(`#live`)),
		until(`document.querySelectorAll('#events-body tr').length > 0`),
	)
	if _, err := replay.Resume(t.Context(), rt, "run-approve", gated()); err != nil {
		t.Fatalf("resume after the approval: %v", err)
	}
	step("the run goes on",
		until(`Array.from(document.querySelectorAll('#events-body tr')).some(tr => tr.textContent.includes("tool.returned"))`),
		until(`document.querySelector('#run-status').textContent === "done"`),
		shot("serve-approved-live.png"),
	)

	if scripts := eval(`document.querySelectorAll("body script, body img").length`); scripts != 0 {
		t.Fatalf("%d script or img elements: log text became markup", scripts)
	}

	step("replay verdict",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/`+finished+`"`),
		chromedp.WaitVisible(chromedp.CSS(`#replay`)),
		chromedp.Click(chromedp.CSS(`#replay`)),
		chromedp.WaitVisible(chromedp.CSS(`#replay-verdict`)),
		until(`document.querySelector('#replay-verdict').textContent.startsWith("Reproduced")`),
		// A console not started with --allow-live offers neither live
		// tools nor forks.
		until(`document.querySelector('#replay-live').hidden && document.querySelectorAll('#events-body tr').length > 0 && !document.querySelector('.fork-at')`),
		shot("serve-replay.png"),
	)

	step("live tail opens",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/run-gated"`),
		chromedp.WaitVisible(chromedp.CSS(`#live`)),
		until(`document.querySelectorAll('#events-body tr').length > 0`),
		shot("serve-live-before.png"),
	)
	rows := eval(`document.querySelectorAll('#events-body tr').length`)
	close(g.open)
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	runDone <- nil // for the cleanup
	step("live event appears",
		until(`Array.from(document.querySelectorAll('#events-body tr')).some(tr => tr.textContent.includes("through the gate"))`),
		until(`document.querySelector('#run-status').textContent === "done"`),
		until(`document.querySelector('#live').hidden`),
		shot("serve-live.png"),
	)
	if after := eval(`document.querySelectorAll('#events-body tr').length`); after <= rows {
		t.Fatalf("%d rows after the run went on, %d before", after, rows)
	}

	mem, err := rt.Memory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Remember(t.Context(), "notes", "the deploy key rotates on mondays "+hostile, nil); err != nil {
		t.Fatal(err)
	}
	step("memory search",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/memory"`),
		chromedp.WaitVisible(chromedp.ID("memory-ns")),
		chromedp.SendKeys(chromedp.ID("memory-ns"), "notes"),
		chromedp.SendKeys(chromedp.ID("memory-q"), "deploy key"),
		chromedp.Click(chromedp.ID("memory-go")),
		until(`document.querySelector('#memory-body').textContent.includes("rotates on mondays <script>")`),
	)
	step("workers",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/workers"`),
		until(`document.querySelector('main').textContent.includes("No workers")`),
	)

	step("two runs side by side",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/compare/`+finished+`/run-approve"`),
		chromedp.WaitVisible(chromedp.ID("compare-verdict")),
		until(`document.querySelector('#compare-verdict').textContent.includes("diverge at chunk #0")`),
		until(`document.querySelectorAll('.side-by-side .column.head').length === 2 && document.querySelectorAll('.chunk.diverged').length > 0`),
		shot("serve-compare.png"),
	)
	if scripts := eval(`document.querySelectorAll("body script, body img").length`); scripts != 0 {
		t.Fatalf("%d script or img elements after the memory page", scripts)
	}
}
