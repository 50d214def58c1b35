package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// These tests play a hostile model through the CLI: a scripted cassette
// whose tool calls attack the host, the store or the terminal.

// shellCassette writes a cassette that runs each command with
// run_shell_command, one call per turn, then answers.
func shellCassette(t *testing.T, cmds ...string) string {
	t.Helper()
	type call struct {
		ID        string            `json:"id"`
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	type turn struct {
		ToolCalls []call `json:"tool_calls,omitempty"`
		Content   string `json:"content,omitempty"`
	}
	var turns []turn
	for i, c := range cmds {
		turns = append(turns, turn{ToolCalls: []call{{ID: fmt.Sprintf("c%d", i+1), Name: "run_shell_command", Arguments: map[string]string{"cmd": c}}}})
	}
	turns = append(turns, turn{Content: "done"})
	b, err := json.Marshal(map[string]any{"scripted": true, "responses": turns})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cassette.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var runIDLine = regexp.MustCompile(`(?m)^run: (run-\S+)$`)

// runCassette runs the cassette on the workspace and returns the run id.
func runCassette(t *testing.T, dir, ws, cas string) string {
	t.Helper()
	out := mustRun(t, dir, "run", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command", "go")
	m := runIDLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in:\n%s", out)
	}
	return m[1]
}

// rathWithin runs the CLI but fails the test instead of hanging past d.
func rathWithin(t *testing.T, d time.Duration, dir string, argv ...string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- rathCLI(t, dir, argv...) }()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("rath %s did not end within %s", strings.Join(argv, " "), d)
		return result{}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantContent(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", path, b, err, want)
	}
}

// A run that changes files under x/ and then replaces x by a link to the
// host must not make a live-tools replay restore those files through the
// link: the host files stay as they were.
func TestReplayLiveTools_LinksNeverFollowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		root bool // link x to / (else to the host directory itself)
	}{
		{"link to root", true},
		{"link to a host directory", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, ws, host := t.TempDir(), t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(host, "f"), "canary\n")
			writeFile(t, filepath.Join(host, "victim"), "keep\n")
			sub, target := "x", host
			if tc.root {
				// x/<host path> is the host directory once x -> /.
				sub, target = filepath.Join("x", strings.TrimPrefix(host, "/")), "/"
			}
			writeFile(t, filepath.Join(ws, sub, "f"), "orig\n")
			cas := shellCassette(t,
				fmt.Sprintf("echo new > %s/f; echo v > %s/victim", sub, sub),
				fmt.Sprintf("rm -rf x && ln -s %s x", target))
			id := runCassette(t, dir, ws, cas)
			wantContent(t, filepath.Join(host, "f"), "canary\n")

			r := rathWithin(t, time.Minute, dir, "replay", "--live-tools", id)
			if r.code != 0 || !strings.Contains(r.stdout, "reproduced: ") {
				t.Errorf("replay --live-tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			wantContent(t, filepath.Join(host, "f"), "canary\n")
			wantContent(t, filepath.Join(host, "victim"), "keep\n")
			if fi, err := os.Lstat(filepath.Join(ws, "x")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the workspace itself was changed: %v %v", fi, err)
			}
		})
	}
}

// A FIFO in the workspace makes a live-tools replay fail at once with an
// error that names it, not block on opening it.
func TestReplayLiveTools_FIFORefused(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	id := runCassette(t, dir, ws, shellCassette(t, "mkfifo pipe"))
	r := rathWithin(t, time.Minute, dir, "replay", "--live-tools", id)
	if r.code != 1 || !strings.Contains(r.stderr, "pipe (a FIFO)") {
		t.Fatalf("replay --live-tools with a FIFO: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A sparse file stays sparse in the copy: the command that measures its
// disk usage and reads its two ends prints the same in the replay.
func TestReplayLiveTools_SparseKeptSparse(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	const size = 256 << 20
	f, err := os.Create(filepath.Join(ws, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("head"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("tail"), size-4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	id := runCassette(t, dir, ws, shellCassette(t, "du -k big | cut -f1; head -c 4 big; tail -c 4 big"))
	r := rathWithin(t, time.Minute, dir, "replay", "--live-tools", id)
	if r.code != 0 || !strings.Contains(r.stdout, "reproduced: ") {
		t.Fatalf("replay --live-tools of a sparse file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// With more files than tracking covers, a model can plant content
// untracked and then change it tracked, making the planted content the
// recorded "before". A live-tools replay must refuse rather than put it
// in the copy as the starting state.
func TestReplayLiveTools_UntrackedRefused(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "X"), "orig\n")
	id := runCassette(t, dir, ws, shellCassette(t,
		"cat X",
		"mkdir many && (cd many && seq 2001 | xargs touch) && echo payload > X",
		"rm -rf many",
		"echo later > X"))
	r := rathWithin(t, time.Minute, dir, "replay", "--live-tools", id)
	if r.code != 1 || !strings.Contains(r.stderr, "cannot rebuild the workspace") || !strings.Contains(r.stderr, "call c2") {
		t.Fatalf("replay --live-tools after untracked changes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A strict replay does not need the workspace.
	if out := mustRun(t, dir, "replay", id); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
}

// "rath run --workspace ." with the default store ./.rath would hand the
// log to the sandbox: refused before the run, naming both paths.
func TestRun_WorkspaceHoldingStoreRefused(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	t.Setenv("RATH_DIR", "")
	cas := shellCassette(t, "rm -f .rath/rath.db-wal .rath/rath.db-shm; echo gone")
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := Run(t.Context(), Config{}, []string{"run", "--cassette", cas, "--workspace", ".", "--tools", "run_shell_command", "go"},
		strings.NewReader(""), &out, &errb)
	if code != ExitFailure || !strings.Contains(errb.String(), "workspace "+real+" contains the store "+filepath.Join(real, ".rath")) {
		t.Fatalf("run --workspace . : exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String(), "run_shell_command") {
		t.Fatalf("a tool ran:\n%s", out.String())
	}
	// The store is intact and holds no run.
	if r := rathCLI(t, filepath.Join(base, ".rath"), "verify"); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Model text and tool output that carry terminal control sequences (an
// OSC 52 clipboard write, a screen clear, a C1 CSI) are printed escaped by
// run and show: no ESC or C1 control reaches the terminal.
func TestRunShow_TerminalEscapesNeutralised(t *testing.T) {
	const answer = "done \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b[H \u009b2J \r end"
	b, err := json.Marshal(map[string]any{"scripted": true, "responses": []any{
		map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "name": "run_shell_command",
			"arguments": map[string]string{"cmd": `printf '\033]52;c;aGk=\007\033[2J\302\233H'`}}}},
		map[string]any{"content": answer},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(t.TempDir(), "cassette.json")
	if err := os.WriteFile(cas, b, 0o644); err != nil {
		t.Fatal(err)
	}
	clean := func(what, out string) {
		t.Helper()
		if i := strings.IndexFunc(out, func(r rune) bool { return r == 0x1b || r == 0x07 || r == '\r' || (r >= 0x80 && r <= 0x9f) }); i >= 0 {
			t.Fatalf("%s printed a control character at byte %d: %q", what, i, out)
		}
		if !strings.Contains(out, `\x1b]52;c;`) {
			t.Fatalf("%s does not show the escaped sequence:\n%s", what, out)
		}
	}
	dir, ws := t.TempDir(), t.TempDir()
	for _, stream := range []bool{true, false} {
		argv := []string{"run", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command"}
		if !stream {
			argv = append(argv, "--no-stream")
		}
		out := mustRun(t, dir, append(argv, "go")...)
		clean(fmt.Sprintf("run (stream %v)", stream), out)
		m := regexp.MustCompile(`(?m)^session: (s-\S+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no session in:\n%s", out)
		}
		show := mustRun(t, dir, "show", m[1])
		clean("show", show)
		if !strings.Contains(show, `\x1b[2J`) || !strings.Contains(show, `\u009b2J`) || !strings.Contains(show, `\x0d end`) {
			t.Fatalf("show does not show the escaped text:\n%s", show)
		}
	}
}

// A run whose sandbox cannot be used (a workspace that is a file, a
// backend with no server) fails before it starts, with a non-zero exit,
// instead of recording a run in which every tool call fails and that
// ends ok.
func TestRun_UnusableSandboxFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "passwd")
	writeFile(t, file, "root:x:0:0::/root:/bin/sh\n")
	t.Setenv("OPEN_SANDBOX_DOMAIN", "127.0.0.1:1") // nothing listens there
	for _, tc := range []struct {
		name      string
		argv      []string
		code      int
		wantInErr string
	}{
		{"workspace is a file", []string{"--workspace", file}, ExitUsage, "is not a directory"},
		{"workspace is a file, no tools", []string{"--workspace", file, "--tools", ""}, ExitUsage, "is not a directory"},
		{"built-in tools without a workspace", nil, ExitUsage, "pass --workspace DIR"},
		{"opensandbox without a server", []string{"--workspace", "w", "--backend", "opensandbox"}, ExitFailure, "backend unavailable: OpenSandbox server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cas := shellCassette(t, "echo hi")
			argv := append([]string{"run", "--cassette", cas, "--tools", "run_shell_command"}, tc.argv...)
			r := rathWithin(t, time.Minute, dir, append(argv, "go")...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.wantInErr) {
				t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.wantInErr, r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "rath.db")); err != nil {
				return // refused before the store was made
			}
			if runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json")); len(runs) != 0 {
				t.Fatalf("a run was recorded: %+v", runs)
			}
			if got := mustRun(t, dir, "verify"); !strings.Contains(got, "ok") {
				t.Fatalf("verify: %s", got)
			}
		})
	}
}

// The restore puts back what the run replaced, in the right order: a
// directory the run turned into a file, and a file turned into a link.
func TestReplayLiveTools_RestoresReplacedEntries(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "a", "x"), "in a dir\n")
	writeFile(t, filepath.Join(ws, "b"), "plain\n")
	id := runCassette(t, dir, ws, shellCassette(t,
		"cat a/x b",
		"rm -rf a && echo now a file > a && rm b && ln -s a b",
		"cat a b"))
	r := rathWithin(t, time.Minute, dir, "replay", "--live-tools", id)
	if r.code != 0 || !strings.Contains(r.stdout, "reproduced: ") {
		t.Fatalf("replay --live-tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
