package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rathStdin runs the test binary as rath, in a process of its own, with
// stdin; it returns stdout, stderr and the exit code.
func rathStdin(t *testing.T, stdin string, argv ...string) result {
	t.Helper()
	cmd := execpkg.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*execpkg.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// storeCounts is what a store holds: runs and sessions.
func storeCounts(t *testing.T, store []string) (runs, sessions int) {
	t.Helper()
	dir := store[1]
	if _, err := os.Stat(filepath.Join(dir, "rath.db")); err != nil && len(store) == 2 {
		return 0, 0 // no store was created
	}
	rs := decodeJSON[[]runView](t, mustRun(t, dir, append(store[2:], "runs", "--json")...))
	ss := decodeJSON[[]map[string]any](t, mustRun(t, dir, append(store[2:], "sessions", "--json")...))
	return len(rs), len(ss)
}

// A batch submitted from stdin by one process is one id a line, in
// order; a worker process executes every run of it; its parameters are
// the command line's, with each line's own fields on top.
func TestSubmit_BatchIsRunByWorkers(t *testing.T) {
	t.Parallel()
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			work := filepath.Join(t.TempDir(), "ws")
			os.MkdirAll(work, 0o755)
			var batch strings.Builder
			for i := range 3 {
				// A worker process keeps one position per cassette file:
				// one file per run.
				cas := filepath.Join(t.TempDir(), fmt.Sprintf("cassette%d.json", i))
				os.WriteFile(cas, []byte(cassette), 0o644)
				fmt.Fprintf(&batch, `{"prompt": "write a file %d", "cassette": %q, "max_rounds": %d}`+"\n\n", i, cas, 5+i)
			}
			r := rathStdin(t, batch.String(), append(append([]string(nil), store...), "submit", "--batch", "-",
				"--workspace", work, "--tools", "write_workspace_file,run_shell_command")...)
			if r.code != 0 {
				t.Fatalf("submit --batch: exit %d\n%s", r.code, r.stderr)
			}
			ids := strings.Fields(r.stdout)
			if len(ids) != 3 {
				t.Fatalf("submit --batch printed %q, want 3 run ids", r.stdout)
			}
			runs := decodeJSON[[]runView](t, mustRun(t, store[1], append(store[2:], "runs", "--json")...))
			if len(runs) != 3 {
				t.Fatalf("runs after the batch: %+v", runs)
			}
			w := execpkg.Command(os.Args[0], append(append([]string(nil), store...), "worker", "--lease", "2s", "--backends", "local")...)
			w.Env = append(os.Environ(), mainEnv+"=1")
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { w.Process.Signal(syscall.SIGTERM); w.Wait() }()
			out := mustRun(t, store[1], append(store[2:], append([]string{"wait", "--timeout", "2m"}, ids...)...)...)
			for _, id := range ids {
				if !strings.Contains(out, id+"\tdone") {
					t.Fatalf("wait: %s", out)
				}
			}
			// The line's max_rounds and the command line's tools are the
			// run's parameters.
			show := mustRun(t, store[1], append(store[2:], "events", "--stream", "submit:"+ids[2], "--json")...)
			for _, want := range []string{`"max_rounds":"7"`, `"tools":"write_workspace_file,run_shell_command"`} {
				if !strings.Contains(strings.ReplaceAll(show, " ", ""), want) {
					t.Fatalf("run.submitted of the third line lacks %s:\n%s", want, show)
				}
			}
		})
	}
}

// A batch with one bad line submits nothing, whether the line fails to
// parse, fails the flags' checks, or fails once the store is open (a
// workspace that is a file): the error names the line.
func TestSubmit_BatchWithABadLineWritesNothing(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	good := `{"prompt": "fine"}`
	cases := []struct {
		name, batch, want string
	}{
		{"unknown field", good + "\n" + `{"prompt": "x", "max_round": 3}`, "line 2"},
		{"not JSON", good + "\n\n" + `{"prompt": "x"`, "line 3"},
		{"two values", `{"prompt": "x"} {"prompt": "y"}`, "line 1"},
		{"no prompt", good + "\n" + `{"model": "m"}`, "line 2: prompt is required"},
		{"bad backend", good + "\n" + `{"prompt": "x", "backend": "docker"}`, "line 2"},
		{"workspace is a file", good + "\n" + good + "\n" + fmt.Sprintf(`{"prompt": "x", "workspace": %q}`, file), "line 3"},
		{"empty", "\n\n", "no run"},
		{"long line", `{"prompt": "` + strings.Repeat("a", maxBatchLine) + `"}`, "line 1"},
	}
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			if backend == "sqlite" {
				// One run first, so "nothing written" is not an empty store.
				mustRun(t, store[1], "submit", "first")
			}
			runs0, sessions0 := storeCounts(t, store)
			for _, tc := range cases {
				r := rathStdin(t, tc.batch, append(append([]string(nil), store...), "submit", "--batch", "-")...)
				if r.code == 0 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
					t.Fatalf("%s: exit %d, stdout %q, stderr %q; want a failure naming %q", tc.name, r.code, r.stdout, r.stderr, tc.want)
				}
			}
			// Once for all the cases: each store open costs seconds here.
			if runs, sessions := storeCounts(t, store); runs != runs0 || sessions != sessions0 {
				t.Fatalf("the refused batches took the store from %d runs, %d sessions to %d, %d", runs0, sessions0, runs, sessions)
			}
			if r := rathStdin(t, "", append(append([]string(nil), store...), "submit", "--batch", "-", "a prompt")...); r.code != ExitUsage {
				t.Fatalf("--batch with a PROMPT: exit %d %s", r.code, r.stderr)
			}
		})
	}
}

var servingAt = regexp.MustCompile(`serving .* on (http://127\.0\.0\.1:\d+/)`)

// POST /api/runs of a "rath serve" process: refused without the token,
// without or with a wrong CSRF value, and for a hostile body (then
// nothing is written); a good array is submitted in one go.
func TestServe_SubmitRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "new", "a store")
	const token = "t0ken-for-the-submit-test-0123456789abcdef"
	cmd := execpkg.Command(os.Args[0], "--dir", dir, "serve", "--addr", "127.0.0.1:0", "--token", token)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var base string
	sc := bufio.NewScanner(stderr)
	for base == "" && sc.Scan() {
		if m := servingAt.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatal("serve printed no URL")
	}
	go io.Copy(io.Discard, stderr)
	do := func(body string, headers ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"api/runs", strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	// The CSRF value is in the served page.
	req, _ := http.NewRequest(http.MethodGet, base, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="rath-csrf" content="([0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF value in the page: %s", page)
	}
	auth, csrf := "Bearer "+token, string(m[1])
	work := t.TempDir()
	good := fmt.Sprintf(`{"prompt": "hello", "workspace": %q, "tools": "run_shell_command"}`, work)
	refused := []struct {
		name    string
		code    int
		body    string
		headers []string
	}{
		{"no token", 401, good, []string{"X-Rath-CSRF", csrf}},
		{"wrong token", 401, good, []string{"Authorization", "Bearer nope", "X-Rath-CSRF", csrf}},
		{"no CSRF", 403, good, []string{"Authorization", auth}},
		{"wrong CSRF", 403, good, []string{"Authorization", auth, "X-Rath-CSRF", strings.Repeat("0", len(csrf))}},
		{"another origin", 403, good, []string{"Authorization", auth, "X-Rath-CSRF", csrf, "Origin", "http://evil.example"}},
		{"not JSON", 400, `{"prompt": `, nil},
		{"unknown field", 400, `{"prompt": "x", "shell": "rm -rf /"}`, nil},
		{"an MCP command", 400, `[` + good + `, {"prompt": "x", "mcp": ["evil=sh -c id"]}]`, nil},
		{"MCP tools", 400, `{"prompt": "x", "tools": "evil.*"}`, nil},
		{"all tools", 400, `{"prompt": "x", "tools": "all"}`, nil},
		{"relative workspace", 400, `{"prompt": "x", "workspace": "../../etc"}`, nil},
		{"relative cassette", 400, `{"prompt": "x", "cassette": "secrets.json"}`, nil},
		{"workspace in the store", 400, fmt.Sprintf(`{"prompt": "x", "workspace": %q}`, dir), nil},
		{"an array of strings", 400, `["x"]`, nil},
		{"empty array", 400, `[]`, nil},
		{"no prompt", 400, `{"prompt": "  "}`, nil},
		{"bad backend", 400, `{"prompt": "x", "backend": "docker"}`, nil},
		{"too many runs", 400, "[" + strings.Repeat(`{"prompt": "x"},`, 1000) + `{"prompt": "x"}]`, nil},
		{"too big", 413, `{"prompt": "` + strings.Repeat("a", 9<<20) + `"}`, nil},
	}
	for _, tc := range refused {
		h := tc.headers
		if h == nil {
			h = []string{"Authorization", auth, "X-Rath-CSRF", csrf}
		}
		if code, body := do(tc.body, h...); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
		}
	}
	if runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json")); len(runs) != 0 {
		t.Fatalf("refused requests wrote runs: %+v", runs)
	}
	code, body := do("["+good+`, {"prompt": "second"}]`, "Authorization", auth, "X-Rath-CSRF", csrf)
	if code != http.StatusCreated {
		t.Fatalf("a good submit: %d %s", code, body)
	}
	got := decodeJSON[[]submittedRun](t, body)
	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(got) != 2 || len(runs) != 2 || got[0].Run == "" || got[0].InputSession == "" {
		t.Fatalf("submitted %+v; runs %+v", got, runs)
	}
	for _, r := range runs {
		if r.Status != "queued" {
			t.Fatalf("run %+v, want queued", r)
		}
	}
}
