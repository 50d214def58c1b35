//go:build integration

package console_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/session"
)

// page is one headless Chromium tab on a console, with the test's steps.
type page struct {
	t     *testing.T
	ctx   context.Context
	tab   context.Context // the tab without the test's deadline, to describe a failed step
	url   string
	shots string
}

func openPage(t *testing.T, srv *console.Server) *page {
	t.Helper()
	exe := chromium(t)
	shots := os.Getenv("RATH_SERVE_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelA)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(cancelC)
	// The first action starts the browser and ties it to its context: the
	// tab's, so the step deadline below cannot close the tab before a
	// failed step is described.
	tab := ctx
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	return &page{t: t, ctx: ctx, tab: tab, url: hs.URL, shots: shots}
}

func (p *page) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v\n%s", name, err, p.describe())
	}
}

// describe says what the page shows, so a step that timed out says
// where the page was and what it said (its status line included).
func (p *page) describe() string {
	ctx, cancel := context.WithTimeout(p.tab, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`"page " + location.href + "\nstatus: " + ((document.getElementById("status") || {}).textContent || "") + "\nmain: " + ((document.querySelector("main") || {}).textContent || "").slice(0, 600)`))
	if err != nil {
		return "the page could not be read: " + err.Error()
	}
	return s
}

func (p *page) shot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		p.t.Logf("screenshot %s (%d bytes)", filepath.Join(p.shots, name), len(png))
		return chromedp.Void{}, os.WriteFile(filepath.Join(p.shots, name), png, 0o644)
	}
}

func (p *page) text(expr string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// TestConsole_RunPageInChromium drives the operator's run page: the trace
// waterfall (bars nested and ordered as the exported spans), the model
// call inspector of a retried call, inline approval with edited
// arguments then resume, and a fork at an event that goes on live as a
// new run. Screenshots go to $RATH_SERVE_SHOTS (docs/ keeps them).
func TestConsole_RunPageInChromium(t *testing.T) {
	rt := newRuntime(t)
	rebuildable(t, rt)
	retried := retryingRun(t, rt)
	in, err := rt.NewUserSession(t.Context(), "Shout after approval")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(t.Context(), "gated-shouter", newAgent(t, flow.WithApproval("shout", flow.Always())), in, rath.WithRunID("run-wait")); !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v, want the run waiting", err)
	}
	srv, err := console.New(console.Options{Runtime: rt, AllowLive: true})
	if err != nil {
		t.Fatal(err)
	}
	p := openPage(t, srv)

	// The waterfall: one row per span, in the export's depth-first order;
	// each row's parent is an earlier row one level up, and its bar lies
	// within the parent's (on screen, not only in the data).
	p.step("waterfall",
		chromedp.Navigate(p.url+"/#/run/"+retried),
		chromedp.WaitVisible(chromedp.CSS(`#waterfall .wf-row[data-kind="chat"]`)),
		until(`document.querySelector('#run-status').textContent === "done"`),
	)
	kinds := p.text(`Array.from(document.querySelectorAll('#waterfall .wf-row[data-span]')).map(r => " ".repeat(+r.dataset.depth) + r.dataset.kind).join(",")`)
	if kinds != "workflow, agent,  chat,  tool,  chat" {
		t.Fatalf("waterfall rows: %q", kinds)
	}
	if bad := p.text(`(() => {
		const rows = Array.from(document.querySelectorAll('#waterfall .wf-row[data-span]'));
		const errs = [];
		rows.forEach((r, i) => {
			if (!r.dataset.parent) return;
			const j = rows.findIndex(q => q.dataset.span === r.dataset.parent);
			if (j < 0 || j >= i || +rows[j].dataset.depth !== +r.dataset.depth - 1) errs.push("row " + i + " not under its parent");
			const b = r.querySelector('.wf-bar').getBoundingClientRect(), pb = rows[j].querySelector('.wf-bar').getBoundingClientRect();
			if (b.left < pb.left - 1 || b.right > pb.right + 1) errs.push("bar " + i + " outside its parent's");
			if (i > 0 && rows[i-1].dataset.parent === r.dataset.parent && +rows[i-1].dataset.start > +r.dataset.start) errs.push("row " + i + " starts before its elder sibling");
		});
		const chats = rows.filter(r => r.dataset.kind === "chat");
		if (chats[0].querySelectorAll('.wf-mark.bad').length !== 1) errs.push("the retried call shows no failed attempt");
		if (!chats[0].textContent.includes("2 attempts")) errs.push("the retried call does not say 2 attempts");
		return errs.join("; ");
	})()`); bad != "" {
		t.Fatal(bad)
	}
	p.step("agents usage", until(`document.querySelector('#agents').textContent.includes("50")`), p.shot("serve-waterfall.png"))

	p.step("inspector",
		chromedp.Click(chromedp.CSS(`#waterfall .wf-row[data-kind="chat"]`)),
		chromedp.WaitVisible(chromedp.ID("inspector-call")),
		until(`document.querySelector('#inspector-call').textContent.includes("slow down")`),
	)
	insp := p.text(`document.querySelector('#inspector-call').textContent`)
	for _, want := range []string{"Retries", "attempt 1 failed", "rate_limit", "Shout <script>alert(1)</script> \\x1b[31mred", "→ call c1 shout", "25 (20 prompt, 5 completion)"} {
		if !strings.Contains(insp, want) {
			t.Errorf("inspector lacks %q:\n%s", want, insp)
		}
	}
	p.step("inspector shot", chromedp.Evaluate[chromedp.Void](`document.querySelector('#inspector').scrollIntoView()`), p.shot("serve-inspector.png"))

	// Event filters by type and agent, and the JSON view.
	p.step("event filters",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#events-type'); s.value = "tool.called"; s.dispatchEvent(new Event("change")); })()`),
		until(`document.querySelectorAll('#events-body tr').length === 1 && document.querySelector('#events-body tr').textContent.includes("tool.called")`),
		chromedp.Click(chromedp.ID("events-json")),
		until(`!!document.querySelector('#events-body pre.json') && document.querySelector('#events-body pre.json').textContent.includes('"call_id": "c1"')`),
		chromedp.Click(chromedp.ID("events-json")),
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#events-type'); s.value = ""; s.dispatchEvent(new Event("change"));
			const a = document.querySelector('#events-agent'); a.value = "root"; a.dispatchEvent(new Event("change")); })()`),
		until(`document.querySelectorAll('#events-body tr').length > 3 && !Array.from(document.querySelectorAll('#events-body tr')).some(tr => tr.textContent.includes("run.started"))`),
		chromedp.Evaluate[chromedp.Void](`(() => { const a = document.querySelector('#events-agent'); a.value = ""; a.dispatchEvent(new Event("change")); })()`),
	)

	// Fork at the first model call: a new run, live from there, opens.
	callSeq := seqOfRun(t, rt, retried, events.TypeProviderCalled)
	p.step("fork at an event",
		chromedp.WaitVisible(chromedp.CSS(`#events-body tr[data-seq="`+itoa(callSeq)+`"] .fork-at`)),
		chromedp.Click(chromedp.CSS(`#events-body tr[data-seq="`+itoa(callSeq)+`"] .fork-at`)),
		chromedp.WaitVisible(chromedp.CSS(`#fork-confirm .fork-go`)),
		chromedp.Click(chromedp.CSS(`#fork-confirm .fork-go`)),
		until(`location.hash.startsWith("#/run/run-") && !location.hash.includes("`+retried+`")`),
		until(`!!document.querySelector('#run-status') && document.querySelector('#run-status').textContent === "done"`),
		until(`document.querySelectorAll('#waterfall .wf-row[data-kind="chat"]').length > 0`),
		p.shot("serve-fork.png"),
	)
	child := strings.TrimPrefix(p.text(`location.hash`), "#/run/")
	row, err := rt.Reader().Run(t.Context(), child)
	if err != nil || row.ParentRun != retried {
		t.Fatalf("fork %s: %+v, %v", child, row, err)
	}

	// The waiting run says so at the top; the person edits the arguments
	// and approves inline, then resumes: the edited call runs.
	p.step("waiting run",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/run-wait"`),
		chromedp.WaitVisible(chromedp.CSS(`#waiting .approval`)),
		until(`!!document.querySelector('#tools .toolcall-box') && document.querySelector('#tools .outcome').textContent.startsWith("waiting for approval")`),
	)
	p.step("edit and approve",
		chromedp.Click(chromedp.CSS(`#waiting details.edit summary`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#waiting textarea.edit-args').value = '{"text": "edited by ann"}'`),
		p.shot("serve-approve-inline.png"),
		chromedp.Click(chromedp.CSS(`#waiting .approve`)),
		until(`!!document.querySelector('#waiting .decided') && document.querySelector('#waiting .decided').textContent.startsWith("approved with edited arguments by os:")`),
	)
	p.step("resume",
		chromedp.Click(chromedp.ID("resume")),
		until(`document.querySelector('#run-status').textContent === "done"`),
		until(`Array.from(document.querySelectorAll('#tools .outcome')).some(o => o.textContent.startsWith("ok"))`),
	)
	out, err := rt.Session(t.Context(), outputOf(t, rt, "run-wait"))
	if err != nil {
		t.Fatal(err)
	}
	if results := toolResults(out); len(results) != 1 || !strings.HasPrefix(results[0], "EDITED BY ANN") {
		t.Fatalf("tool results after the edited approval: %q", results)
	}
	// The memory browser: namespaces, a namespace browsed without a query
	// with each memory's provenance, and forget with a reason.
	mem, err := rt.Memory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Remember(t.Context(), "notes", "the deploy key rotates on mondays "+hostile, map[string]string{"agent": "root.ops"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Commit(t.Context(), "lessons", out); err != nil {
		t.Fatal(err)
	}
	p.step("memory namespaces",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/memory"`),
		until(`document.querySelectorAll('#memory-namespaces a').length === 2`),
		chromedp.Click(chromedp.CSS(`#memory-namespaces a[data-ns="lessons"]`)),
		until(`document.querySelectorAll('#memory-body tr[data-id]').length >= 2`),
		until(`document.querySelector('#memory-body tr[data-id] .prov').textContent.includes("run-wait")`),
		chromedp.SendKeys(chromedp.CSS(`#memory-body tr[data-id] .forget-reason`), "a one-off, not a lesson"),
		p.shot("serve-memory.png"),
		chromedp.Click(chromedp.CSS(`#memory-body tr[data-id] .forget`)),
		until(`document.querySelector('#memory-body tr.forgotten') !== null && document.querySelector('#memory-body tr.forgotten').textContent.includes("reason recorded")`),
	)
	p.step("memory browse and search",
		chromedp.Click(chromedp.CSS(`#memory-namespaces a[data-ns="notes"]`)),
		until(`document.querySelector('#memory-body').textContent.includes("rotates on mondays <script>")`),
		until(`document.querySelector('#memory-body .prov').textContent.includes("root.ops")`),
	)
	// The whole store's graph, labelled by agent and outcome; two nodes
	// picked open the compare page, whose rows align the transcripts.
	p.step("graph and compare",
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/graph"`),
		chromedp.WaitVisible(chromedp.CSS(`svg.graph g.node[data-session="`+outputOf(t, rt, retried)+`"]`)),
		until(`document.querySelector('svg.graph g.node[data-session="`+outputOf(t, rt, retried)+`"]').textContent.includes("root · done")`),
		chromedp.Click(chromedp.ID("graph-select")),
		chromedp.Click(chromedp.CSS(`svg.graph g.node[data-session="`+outputOf(t, rt, retried)+`"]`)),
		chromedp.Click(chromedp.CSS(`svg.graph g.node[data-session="`+outputOf(t, rt, child)+`"]`)),
		until(`!document.querySelector('#graph-compare').hidden && document.querySelectorAll('svg.graph g.node.chosen').length === 2`),
		p.shot("serve-graph.png"),
		chromedp.Click(chromedp.ID("graph-compare")),
		chromedp.WaitVisible(chromedp.ID("compare-rows")),
		until(`document.querySelector('#compare-changed').textContent.includes("aligned rows differ")`),
		p.shot("serve-compare-aligned.png"),
	)
	// The fork replayed the original up to its first model call, then
	// went on live: the first chunks pair as equal, not as changed.
	if same := p.text(`String(document.querySelectorAll('#compare-rows .chunk:not(.diverged):not(.gap-chunk)').length)`); same == "0" {
		t.Fatalf("no equal rows in the aligned compare: %s", p.text(`document.querySelector('#compare-rows').textContent`))
	}
	if n := p.text(`String(document.querySelectorAll("body script, body img").length)`); n != "0" {
		t.Fatalf("%s script or img elements: log text became markup", n)
	}
}

// toolResults are the tool results a session's transcript holds.
func toolResults(s *session.Session) []string {
	var out []string
	for _, c := range s.Chunks() {
		if c.Role == events.RoleToolResult {
			out = append(out, c.Content)
		}
	}
	return out
}

// seqOfRun is the seq of the run's first event of type typ.
func seqOfRun(t *testing.T, rt *rath.Runtime, run, typ string) int64 {
	t.Helper()
	evs, err := rt.Store().ReadRun(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == typ {
			return ev.Seq
		}
	}
	t.Fatalf("run %s has no %s", run, typ)
	return 0
}
