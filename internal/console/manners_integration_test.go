//go:build integration

package console_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/replay"
)

// The console offers only what a run's state allows and says what it
// does: Resume and Cancel by state, a fork only after a confirmation that
// it calls the model and tools live, the console's replay in the dossier,
// a clear answer for an unknown run, tool times in ms as the waterfall
// draws them, a model for every run, the inbox's age and argument
// editing, and no page wider than a phone's window.
func TestConsole_MannersInChromium(t *testing.T) {
	rt := newRuntime(t)
	rebuildable(t, rt)
	finished := startRun(t, rt, "shouter", "Shout "+hostile)
	unnamed := unnamedRun(t, rt)
	in, err := rt.NewUserSession(t.Context(), "Shout after approval")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(t.Context(), "gated-shouter", newAgent(t, flow.WithApproval("shout", flow.Always())), in, rath.WithRunID("run-wait")); !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v, want the run waiting", err)
	}
	fl, err := fleet.Open(t.Context(), rt, fleet.Options{SubmitOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() })
	qin, err := rt.NewUserSession(t.Context(), "queued for a worker")
	if err != nil {
		t.Fatal(err)
	}
	queued, err := fl.Submit(t.Context(), "shouter", qin, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := console.New(console.Options{Runtime: rt, AllowLive: true})
	if err != nil {
		t.Fatal(err)
	}
	p := openPage(t, srv)
	offered := func() string {
		return p.text(`["resume", "cancel"].filter(b => !document.getElementById(b).hidden).join(",")`)
	}
	loads := 0
	openRun := func(run string) {
		t.Helper()
		loads++ // a new URL: the page loads afresh
		p.step("open "+run,
			chromedp.Navigate(p.url+"/?load="+itoa(int64(loads))+"#/run/"+run),
			// A queued run has no events of its own yet.
			until(`!!document.querySelector('#run-status') && document.querySelector('#run-status').textContent !== ""`),
		)
	}

	// Resume and Cancel: a finished run offers neither, a run never
	// submitted that waits offers Resume, a submitted one Cancel.
	for _, tc := range []struct{ run, want string }{{finished, ""}, {"run-wait", "resume"}, {queued, "cancel"}} {
		openRun(tc.run)
		if got := offered(); got != tc.want {
			t.Errorf("run %s offers %q, want %q", tc.run, got, tc.want)
		}
	}
	p.step("cancel the submitted run",
		chromedp.Click(chromedp.ID("cancel")),
		until(`document.querySelector('#run-status').textContent === "canceled"`),
		until(`document.getElementById('cancel').hidden && document.getElementById('resume').hidden`),
	)

	// A fork asks first, saying it calls the model and tools live; Cancel
	// starts nothing.
	openRun(finished)
	runs := func() int {
		rows, err := rt.Reader().Runs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	before := runs()
	p.step("fork asks",
		// The click lands where the button is drawn: wait until the
		// sections above the events (trace, graph, tools) have loaded and
		// stopped moving it.
		until(`!document.querySelector('main').textContent.includes("Loading")`),
		chromedp.Click(chromedp.CSS(`#events-body tr .fork-at`)),
		chromedp.WaitVisible(chromedp.ID("fork-confirm")),
	)
	if says := p.text(`document.querySelector('#fork-confirm').textContent`); !strings.Contains(says, "calls the model and runs the tools live") {
		t.Errorf("the fork's confirmation says %q", says)
	}
	p.step("fork not confirmed", chromedp.Click(chromedp.CSS(`#fork-confirm .fork-no`)), until(`!document.getElementById('fork-confirm')`))
	if n := runs(); n != before || p.text(`location.hash`) != "#/run/"+finished {
		t.Fatalf("a fork not confirmed started a run: %d runs, %d before, page %s", n, before, p.text(`location.hash`))
	}

	// Tool times: the tool box says what the waterfall's bar says, in ms.
	p.step("tool times",
		until(`!!document.querySelector('#tools .toolcall-box .outcome') && !!document.querySelector('#waterfall .wf-row[data-kind="tool"] .wf-dur')`),
	)
	outcome := p.text(`document.querySelector('#tools .toolcall-box .outcome').textContent`)
	bar := p.text(`document.querySelector('#waterfall .wf-row[data-kind="tool"] .wf-dur').textContent`)
	if !regexp.MustCompile(`^[0-9.]+ ms$`).MatchString(bar) || !strings.HasSuffix(outcome, " · "+bar) {
		t.Errorf("tool outcome %q beside a bar of %q", outcome, bar)
	}

	// The console's replay is the dossier's verdict and stays on the page.
	p.step("replay",
		chromedp.Click(chromedp.ID("replay")),
		until(`!!document.querySelector('#replay-verdict') && document.querySelector('#replay-verdict').textContent.startsWith("Reproduced")`),
	)
	dossier, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`fetch("/api/runs/`+finished+`/dossier?view=1&verify=0").then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dossier, "not replayed") || !strings.Contains(dossier, "reproduced") {
		t.Errorf("the dossier after the console's replay does not say reproduced")
	}
	openRun(finished)
	p.step("verdict after a reload", until(`!!document.querySelector('#replay-verdict') && document.querySelector('#replay-verdict').textContent.startsWith("Reproduced")`))

	// An unknown run says so.
	p.step("unknown run",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/run-nope"`),
		chromedp.WaitVisible(chromedp.ID("not-found")),
	)
	if says := p.text(`document.querySelector('main').textContent`); !strings.Contains(says, "No such run") || strings.Contains(says, "Loading") {
		t.Errorf("unknown run page: %q", says)
	}

	// Every run names its model: the provider's label when the calls name
	// no model.
	p.step("runs list",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/runs"`),
		chromedp.WaitVisible(chromedp.CSS(`#runs-body tr[data-run="`+unnamed+`"]`)),
	)
	if m := p.text(`document.querySelector('#runs-body tr[data-run="` + unnamed + `"] td:nth-child(4)').textContent`); m != "scripted" {
		t.Errorf("model column of %s: %q", unnamed, m)
	}

	// The inbox: how long ago each request was made, and the arguments
	// edited before approving.
	p.step("inbox",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/approvals"`),
		chromedp.WaitVisible(chromedp.CSS(`#approvals .approval .age`)),
	)
	if age := p.text(`document.querySelector('#approvals .approval .age').textContent`); !regexp.MustCompile(`^asked (just now|\d+ s ago)$`).MatchString(age) {
		t.Errorf("request age %q", age)
	}
	p.step("edit and approve in the inbox",
		chromedp.Click(chromedp.CSS(`#approvals details.edit summary`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#approvals textarea.edit-args').value = '{"text": "edited in the inbox"}'`),
		chromedp.Click(chromedp.CSS(`#approvals .approve`)),
		until(`!!document.querySelector('#approvals .decided') && document.querySelector('#approvals .decided').textContent.startsWith("approved with edited arguments by os:")`),
	)
	if _, err := replay.Resume(t.Context(), rt, "run-wait", newAgent(t, flow.WithApproval("shout", flow.Always()))); err != nil {
		t.Fatal(err)
	}
	out, err := rt.Session(t.Context(), outputOf(t, rt, "run-wait"))
	if err != nil {
		t.Fatal(err)
	}
	if results := toolResults(out); len(results) != 1 || !strings.HasPrefix(results[0], "EDITED IN THE INBOX") {
		t.Errorf("tool results after the edit in the inbox: %q", results)
	}

	// A phone's window: the page never scrolls sideways; wide tables
	// scroll in their own box.
	p.step("narrow window", chromedp.EmulateViewport(390, 844))
	for _, hash := range []string{"#/runs", "#/run/" + finished, "#/approvals", "#/workers"} {
		p.step("narrow "+hash,
			chromedp.Evaluate[chromedp.Void](`location.hash = "`+hash+`"`),
			until(`!document.querySelector('main').textContent.includes("Loading")`),
			until(`document.querySelectorAll('main table, main .approval, main p').length > 0`),
		)
		if w := p.text(`String(document.documentElement.scrollWidth) + " in " + String(window.innerWidth)`); w != "390 in 390" {
			t.Errorf("%s at 390 px wide: page width %s", hash, w)
		}
	}
}
