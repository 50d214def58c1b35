package cli

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// serveConsole starts `rath serve` as its own process over dir with
// extra flags and returns its base URL and the page's CSRF value; stop
// kills it (the test's cleanup does too).
func serveConsole(t *testing.T, dir string, extra ...string) (base, csrf, live string, stop func()) {
	t.Helper()
	cmd, serveErr := startRath(t, append([]string{"--dir", dir, "serve", "--addr", "127.0.0.1:0"}, extra...)...)
	url := servedURL(t, serveErr)
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	c := regexp.MustCompile(`name="rath-csrf" content="([0-9a-f]+)"`).FindSubmatch(page)
	l := regexp.MustCompile(`name="rath-live" content="([a-z]+)"`).FindSubmatch(page)
	if c == nil || l == nil {
		t.Fatalf("the page lacks its CSRF or live setting:\n%s", page)
	}
	return url, string(c[1]), string(l[1]), func() { cmd.Process.Kill(); cmd.Wait() }
}

// servedURL reads the URL rath serve prints on stderr, then drains it.
func servedURL(t *testing.T, serveErr *bufio.Reader) string {
	t.Helper()
	line, err := serveErr.ReadString('\n')
	for err == nil && !servingURL.MatchString(line) {
		line, err = serveErr.ReadString('\n')
	}
	m := servingURL.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no URL from rath serve: %q %v", line, err)
	}
	go io.Copy(io.Discard, serveErr)
	return m[1]
}

// post sends a console write with the page's CSRF value.
func post(t *testing.T, base, csrf, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("X-Rath-CSRF", csrf)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A recorded command that writes outside its workspace is not run again
// by a console user: a console started without --allow-live refuses a
// replay with live tools and a fork (403), offers neither on its page,
// and the file is left as the run left it; a replay from the record still
// works. With --allow-live the tools run on the listed backends only:
// the local run is not run again on the default ones (bwrap,
// opensandbox), and is when the operator lists local.
func TestServe_LiveActionsAreTheOperatorsDecision(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.log")
	env := []string{"RATH_DIR=" + dir, "RATH_HOME=" + t.TempDir()}
	cas := shellCassette(t, "echo ran >> '"+outside+"'")
	out := rathProc(t, env, "run", "--cassette", cas, "--workspace", work, "--backend", "local", "--tools", "run_shell_command", "--no-stream", "append")
	run := strings.TrimSpace(lastField(out, "run: "))
	lines := func() int {
		t.Helper()
		b, err := os.ReadFile(outside)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "ran\n")
	}
	if n := lines(); n != 1 {
		t.Fatalf("the run appended %d lines", n)
	}
	// The fork point: the run's start, so that all of it goes on live.
	started := regexp.MustCompile(`"seq":(\d+),[^\n]*"type":"run.started"`).FindStringSubmatch(rathProc(t, env, "events", "--json"))
	if started == nil {
		t.Fatal("no run.started event")
	}

	base, csrf, live, stop := serveConsole(t, dir)
	if live != "off" {
		t.Errorf("the page of a default console offers live actions (%q)", live)
	}
	if code, body := post(t, base, csrf, "api/runs/"+run+"/replay?live_tools=1", ""); code != http.StatusForbidden || !strings.Contains(body, "--allow-live") {
		t.Errorf("live replay on a default console: %d %s", code, body)
	}
	if code, body := post(t, base, csrf, "api/runs/"+run+"/fork", `{"seq": `+started[1]+`}`); code != http.StatusForbidden || !strings.Contains(body, "--allow-live") {
		t.Errorf("fork on a default console: %d %s", code, body)
	}
	if code, body := post(t, base, csrf, "api/runs/"+run+"/replay", ""); code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Errorf("replay from the record: %d %s", code, body)
	}
	if n := lines(); n != 1 {
		t.Fatalf("a default console ran the recorded command again: %d lines", n)
	}
	if runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json")); len(runs) != 1 {
		t.Fatalf("a refused fork left a run: %+v", runs)
	}
	stop()

	base, csrf, live, stop = serveConsole(t, dir, "--allow-live")
	if live != "on" {
		t.Errorf("the page of an --allow-live console: %q", live)
	}
	code, body := post(t, base, csrf, "api/runs/"+run+"/replay?live_tools=1", "")
	if code == http.StatusOK && strings.Contains(body, `"ok":true`) {
		t.Errorf("a local run replayed live on bwrap and opensandbox only: %d %s", code, body)
	}
	if n := lines(); n != 1 {
		t.Fatalf("the command ran on a backend the operator did not list: %d lines", n)
	}
	stop()

	base, csrf, _, stop = serveConsole(t, dir, "--allow-live", "--backends", "local")
	defer stop()
	if code, body := post(t, base, csrf, "api/runs/"+run+"/replay?live_tools=1", ""); code != http.StatusOK {
		t.Fatalf("live replay with --backends local: %d %s", code, body)
	}
	if n := lines(); n != 2 {
		t.Fatalf("the operator allowed local, and the command ran %d times in all", n)
	}
}

// --backends and --workspace-root confine live actions; without
// --allow-live they are a usage error, not a silent no-op.
func TestServe_LiveFlagsNeedAllowLive(t *testing.T) {
	r := rathCLI(t, t.TempDir(), "serve", "--backends", "local")
	if r.code != 2 || !strings.Contains(r.stderr, "--allow-live") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
