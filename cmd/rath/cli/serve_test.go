package cli

import (
	"context"

	"encoding/json"
	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestServe_NonLoopbackNeedsAToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RATH_TOKEN", "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:7777"} {
		r := rathCLI(t, dir, "serve", "--addr", addr)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "not a loopback address") {
			t.Errorf("serve --addr %s: exit %d\n%s", addr, r.code, r.stderr)
		}
	}
}

var servingURL = regexp.MustCompile(`serving .* on (http://127\.0\.0\.1:\d+/)`)

// The API answers what the CLI's --json prints, replays a run the CLI
// can rebuild (the demo), and the command stops cleanly on interrupt.
func TestServe_APIMatchesTheCLIAndStopsOnInterrupt(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	mustRun(t, dir, "demo")
	runsJSON := mustRun(t, dir, "runs", "--json")
	var runs []runView
	if err := json.Unmarshal([]byte(runsJSON), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %s", err, runsJSON)
	}
	showJSON := mustRun(t, dir, "show", runs[0].Output, "--json")
	graphJSON := mustRun(t, dir, "graph", "--json")
	// A run that started and never finished (its process died): a tail
	// of it waits for events that never come.
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	inRun := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: "run-open", Seed: "seed"}})
	if _, err := inRun.Append(t.Context(), "run-open", eventlog.NoStream, events.RunStarted{Run: "run-open", Workflow: "gone", InputSession: runs[0].Input, Seed: "seed"}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Config{}, []string{"--dir", dir, "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &stderr)
	}()
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for base == "" {
		if m := servingURL.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no URL on stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	get := func(path string) string {
		t.Helper()
		return getOK(t, base+path)
	}
	// Every field `rath runs --json` prints is in the API's run, equal.
	var cliRuns []map[string]any
	json.Unmarshal([]byte(runsJSON), &cliRuns)
	var page struct {
		Runs []map[string]any `json:"runs"`
	}
	json.Unmarshal([]byte(get("api/runs")), &page)
	// Newest first: the open run, then the demo's.
	if len(page.Runs) != 2 || page.Runs[0]["id"] != "run-open" || page.Runs[0]["status"] != "running" {
		t.Fatalf("api runs: %+v", page)
	}
	for k, v := range cliRuns[0] {
		if !reflect.DeepEqual(page.Runs[1][k], v) {
			t.Errorf("run field %s: api %v, cli %v", k, page.Runs[1][k], v)
		}
	}
	same := func(name, cli, api string) {
		t.Helper()
		var a, b any
		json.Unmarshal([]byte(cli), &a)
		json.Unmarshal([]byte(api), &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the API differs from the CLI\ncli: %.500s\napi: %.500s", name, cli, api)
		}
	}
	same("show", showJSON, get("api/sessions/"+runs[0].Output))
	same("graph", graphJSON, get("api/graph"))

	// A replay through the page's route, with its CSRF value.
	page0 := get("")
	m := regexp.MustCompile(`name="rath-csrf" content="([0-9a-f]+)"`).FindStringSubmatch(page0)
	if m == nil {
		t.Fatal("no CSRF value in the page")
	}
	req, _ := http.NewRequest("POST", base+"api/runs/"+runs[0].ID+"/replay", nil)
	req.Header.Set("X-Rath-CSRF", m[1])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"ok":true`) {
		t.Fatalf("replay: %s %s", res.Status, b)
	}

	// An open live tail does not hold the shutdown.
	tail, err := http.Get(base + "api/runs/run-open/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Body.Close()
	first := make([]byte, 4096)
	if n, err := io.ReadAtLeast(tail.Body, first, 200); err != nil || !strings.Contains(string(first[:n]), "run.started") {
		t.Fatalf("tail: %q %v", first[:n], err)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK || !strings.Contains(stderr.String(), "rath: stopped") {
			t.Fatalf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on interrupt")
	}
}
