//go:build integration

package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/console"
)

// TestConsole_EvalsInChromium drives the Evals page on both stores: the
// lists, a dataset's items linked to their runs, an experiment's scores
// (a hostile reason shown as text) linked to the events they read, the
// comparison's flipped item linked to the run each side scored, and a
// 404 page for an unknown dataset or experiment.
func TestConsole_EvalsInChromium(t *testing.T) {
	for _, store := range []struct {
		name string
		open func(*testing.T) *rath.Runtime
	}{
		{"sqlite", func(t *testing.T) *rath.Runtime { return newRuntime(t) }},
		{"postgres", pgRuntime},
	} {
		t.Run(store.name, func(t *testing.T) {
			rt := store.open(t)
			e := recordEvals(t, rt)
			srv, err := console.New(console.Options{Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			evalsInChromium(t, openPage(t, srv), e)
		})
	}
}

// evalsStep runs a step within 30 s; on failure it reports what the
// page shows (its status line and main), while the page still answers.
func evalsStep(p *page, name string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v\nhash %s\nstatus: %s\nmain: %.2000s", name, err, p.text(`location.hash`), p.text(`document.getElementById('status').textContent`),
			p.text(`document.getElementById('main').innerText`))
	}
}

func evalsInChromium(t *testing.T, p *page, e evalsFixture) {
	// The first step starts the browser: on the page's own context, which
	// outlives each step's deadline.
	p.step("open", chromedp.Navigate(p.url+"/#/evals"))
	evalsStep(p, "lists",
		chromedp.WaitVisible(chromedp.CSS(`#datasets tr[data-dataset="capitals"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#experiments tr[data-experiment="candidate"]`)),
	)
	if got := p.text(`document.querySelector('#experiments tr[data-experiment="baseline"]').textContent`); !strings.Contains(got, "contains:Paris 0.5 (2 items)") {
		t.Fatalf("baseline's means: %q", got)
	}
	evalsStep(p, "dataset",
		chromedp.Click(chromedp.CSS(`#datasets tr[data-dataset="capitals"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#items tr[data-item="`+e.right+`"]`)),
		chromedp.Click(chromedp.CSS(`#items tr[data-item="`+e.right+`"] td:nth-child(2) a`)),
		until(`location.hash === "#/run/`+e.right+`" && document.querySelector('h1').textContent.includes("`+e.right+`")`),
	)

	// A score's read events, marked on its run's page.
	evalsStep(p, "experiment",
		chromedp.Navigate(p.url+"/#/evals/experiment/baseline"),
		chromedp.WaitVisible(chromedp.CSS(`#scores tr[data-item="`+e.right+`"][data-scorer="reasoned"]`)),
	)
	reason := p.text(`document.querySelector('#scores tr[data-item="` + e.right + `"][data-scorer="reasoned"] td.reason').textContent`)
	if !strings.Contains(reason, "<script>alert(1)</script>") || !strings.Contains(reason, `\x1b[31m`) || strings.ContainsRune(reason, 0x1b) {
		t.Fatalf("reason shown as %q, want the markup as text and the escape visible", reason)
	}
	if n := p.text(`String(document.querySelectorAll('body script, body img').length)`); n != "0" {
		t.Fatalf("%s elements from a score's reason", n)
	}
	evalsStep(p, "read events",
		chromedp.Click(chromedp.CSS(`#scores tr[data-item="`+e.right+`"][data-scorer="contains:Paris"] a.read-link`)),
		until(`document.querySelector('#events-read') !== null`),
	)
	if got, want := p.text(`Array.from(document.querySelectorAll('#events tr.target')).map(r => r.id).join(",")`), fmt.Sprintf("ev-%d", e.answer); got != want {
		t.Fatalf("marked events %q, want %q", got, want)
	}
	if !strings.Contains(p.text(`location.hash`), e.right) {
		t.Fatalf("read link opened %s, want run %s", p.text(`location.hash`), e.right)
	}

	evalsStep(p, "compare",
		chromedp.Navigate(p.url+"/#/evals"),
		chromedp.WaitVisible(chromedp.ID("evals-compare-go")),
		chromedp.SetValue(chromedp.ID("evals-compare-a"), "baseline"),
		chromedp.SetValue(chromedp.ID("evals-compare-b"), "candidate"),
		chromedp.Click(chromedp.ID("evals-compare-go")),
		chromedp.WaitVisible(chromedp.CSS(`#flipped tr.flipped[data-item="`+e.right+`"]`)),
		p.shot("serve-evals.png"),
	)
	if got := p.text(`Array.from(document.querySelectorAll('#flipped tbody tr')).map(r => r.dataset.item + " " + r.dataset.scorer).join(",")`); got != e.right+" contains:Paris" {
		t.Fatalf("flipped rows %q", got)
	}
	evalsStep(p, "flipped item's run in B",
		chromedp.Click(chromedp.CSS(`#flipped tr.flipped td:nth-child(7) a`)),
		until(`location.hash === "#/run/`+e.rerun+`" && document.getElementById("events-body") !== null`),
	)

	// Hostile dataset metadata, and unknown names.
	evalsStep(p, "jsonl dataset",
		chromedp.Navigate(p.url+"/#/evals/dataset/cases"),
		chromedp.WaitVisible(chromedp.CSS(`#items td.metadata`)),
	)
	if md := p.text(`document.querySelector('#items td.metadata').textContent`); !strings.Contains(md, "<script>alert(1)</script>") || p.text(`String(document.querySelectorAll('body script, body img').length)`) != "0" {
		t.Fatalf("metadata shown as %q", md)
	}
	for _, h := range []string{"#/evals/dataset/nope", "#/evals/experiment/nope", "#/evals/compare/baseline/nope"} {
		evalsStep(p, "404 "+h, chromedp.Navigate(p.url+"/"+h), chromedp.WaitVisible(chromedp.ID("not-found")))
	}
}
