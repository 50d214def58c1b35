package cli

import (
	"bufio"
	"errors"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
)

// startWorker starts a "rath worker" process on dir with extra flags and
// waits until it says it works; stop (also called at cleanup) stops it
// with SIGTERM and waits for it.
func startWorker(t *testing.T, dir string, extra ...string) (stop func()) {
	t.Helper()
	w := execpkg.Command(os.Args[0], append([]string{"--dir", dir, "worker", "--lease", "2s"}, extra...)...)
	w.Env = append(os.Environ(), mainEnv+"=1")
	stderr, err := w.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			w.Process.Signal(syscall.SIGTERM)
			w.Wait()
		})
	}
	t.Cleanup(stop)
	if line, _ := bufio.NewReader(stderr).ReadString('\n'); !strings.Contains(line, "worker ") {
		t.Fatalf("worker said %q", line)
	}
	go func() { // keep the pipe drained
		buf := make([]byte, 4096)
		for {
			if _, err := stderr.Read(buf); err != nil {
				return
			}
		}
	}()
	return stop
}

// runReason returns a run's status and the reason it failed.
func runReason(t *testing.T, dir, id string) (status, reason string) {
	t.Helper()
	for _, v := range decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json")) {
		if v.ID == id {
			return v.Status, v.Error
		}
	}
	t.Fatalf("no run %s", id)
	return "", ""
}

// A submitter attacks the workers through the run's parameters: an MCP
// server command of its own (which would start on the worker's host,
// outside any sandbox) and a workspace on the local backend (tools
// unconfined as the worker's user). A worker started with the defaults
// runs neither: each run fails with the reason, recorded, and nothing of
// it ran (the marker files stay absent); the log verifies. A server the
// worker's own config has, named by the run, still works; and so do the
// submitted server and the local backend once the operator allows them.
func TestWorker_RunsOnlyWhatItsOperatorAllows(t *testing.T) {
	withMCPConfig(t, map[string]any{"faults": faultsEntry(t, nil)})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marks := t.TempDir()
	mcpMark, shellMark := filepath.Join(marks, "mcp-ran"), filepath.Join(marks, "shell-ran")
	// The hostile server leaves a mark wherever it starts, then serves.
	script := filepath.Join(t.TempDir(), "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+mcpMark+"'\n"+mcpServerEnv+"=faults exec '"+exe+"' -test.run='^$'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	submitEvil := func() string {
		t.Helper()
		cas := writeCassette(t, "asked", `c1:evil__whoami:{}`)
		id := strings.TrimSpace(mustRun(t, dir, "submit", "--cassette", cas, "--mcp", "evil="+script, "--tools", "evil.whoami", "who"))
		// rath submit lists the server's tools on the submitter's host;
		// that mark is the submitter's own doing.
		if _, err := os.Stat(mcpMark); err != nil {
			t.Fatalf("the script did not run at submit: %v", err)
		}
		os.Remove(mcpMark)
		return id
	}
	work := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(work, 0o755)
	submitLocal := func() string {
		t.Helper()
		cas := writeCassette(t, "done", `c1:run_shell_command:{"cmd":"touch '`+shellMark+`'"}`)
		return strings.TrimSpace(mustRun(t, dir, "submit", "--cassette", cas, "--workspace", work, "--backend", "local", "--tools", "run_shell_command", "go"))
	}
	evil, localRun := submitEvil(), submitLocal()
	named := strings.TrimSpace(mustRun(t, dir, "submit", "--cassette", writeCassette(t, "asked", `c1:faults__whoami:{}`), "--tools", "faults.whoami", "who"))

	stopStrict := startWorker(t, dir)
	r := rathCLI(t, dir, "wait", "--timeout", "2m", evil, localRun, named)
	if r.code != ExitFailure {
		t.Fatalf("wait: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for id, want := range map[string]string{
		evil:     `this worker refuses the run's MCP server "evil" (command "` + script + `")`,
		localRun: `this worker refuses the run's backend "local"`,
	} {
		status, reason := runReason(t, dir, id)
		if status != "failed" || !strings.Contains(reason, want) {
			t.Errorf("run %s: %s %q, want failed with %q", id, status, reason, want)
		}
		if evs := mustRun(t, dir, "events", "--run", id, "--json"); strings.Contains(evs, "tool.called") || strings.Contains(evs, "provider.called") {
			t.Errorf("a refused run made calls:\n%s", evs)
		}
	}
	for _, m := range []string{mcpMark, shellMark} {
		if _, err := os.Stat(m); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the refused run ran on the worker (%v)", filepath.Base(m), err)
		}
	}
	if status, reason := runReason(t, dir, named); status != "done" {
		t.Errorf("the run naming the worker's own server: %s %q", status, reason)
	}
	mustRun(t, dir, "verify")
	stopStrict()

	// The operator allows both: the same submissions run.
	evil, localRun = submitEvil(), submitLocal()
	startWorker(t, dir, "--allow-submitted-mcp", "--backends", "local,bwrap")
	if out := mustRun(t, dir, "wait", "--timeout", "2m", evil, localRun); strings.Count(out, "\tdone") != 2 {
		t.Fatalf("wait: %s", out)
	}
	for _, m := range []string{mcpMark, shellMark} {
		if _, err := os.Stat(m); err != nil {
			t.Errorf("%s: the allowed run did not run: %v", filepath.Base(m), err)
		}
	}
	mustRun(t, dir, "verify")
}

// A worker started with --workspace-root runs a local workspace and reads
// a cassette only under that directory: a run naming a directory
// elsewhere, one under the root that is a symlink leading out of it, or a
// cassette elsewhere, fails with the reason and runs nothing (the marker
// files stay absent); one inside runs. A root
// that is not a directory is a usage error.
func TestWorker_KeepsWorkspacesUnderItsRoot(t *testing.T) {
	dir, root, marks := t.TempDir(), t.TempDir(), t.TempDir()
	inside, elsewhere := filepath.Join(root, "ws"), filepath.Join(t.TempDir(), "ws")
	for _, d := range []string{inside, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	// Each run's cassette is under the root, but for the last run's.
	submit := func(ws, mark string, cassetteInRoot bool) string {
		t.Helper()
		cas := writeCassette(t, "done", `c1:run_shell_command:{"cmd":"touch '`+filepath.Join(marks, mark)+`'"}`)
		if cassetteInRoot {
			moved := filepath.Join(root, mark+".json")
			if err := os.Rename(cas, moved); err != nil {
				t.Fatal(err)
			}
			cas = moved
		}
		return strings.TrimSpace(mustRun(t, dir, "submit", "--cassette", cas, "--workspace", ws, "--backend", "local", "--tools", "run_shell_command", "go"))
	}
	in, out, through, cassette := submit(inside, "inside", true), submit(elsewhere, "elsewhere", true), submit(link, "through-a-link", true),
		submit(inside, "a-cassette-elsewhere", false)
	startWorker(t, dir, "--backends", "local", "--workspace-root", root)
	if r := rathCLI(t, dir, "wait", "--timeout", "2m", in, out, through, cassette); r.code != ExitFailure {
		t.Fatalf("wait: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if status, reason := runReason(t, dir, in); status != "done" {
		t.Fatalf("the run inside the root: %s %q", status, reason)
	}
	for id, want := range map[string]string{out: "workspace", through: "workspace", cassette: "cassette"} {
		status, reason := runReason(t, dir, id)
		if status != "failed" || !strings.Contains(reason, "this worker refuses the run's "+want) {
			t.Errorf("run %s: %s %q, want refused for its %s", id, status, reason, want)
		}
		if evs := mustRun(t, dir, "events", "--run", id, "--json"); strings.Contains(evs, "tool.called") {
			t.Errorf("a refused run called a tool:\n%s", evs)
		}
	}
	for mark, want := range map[string]bool{"inside": true, "elsewhere": false, "through-a-link": false, "a-cassette-elsewhere": false} {
		if _, err := os.Stat(filepath.Join(marks, mark)); (err == nil) != want {
			t.Errorf("%s: ran %v, want %v", mark, err == nil, want)
		}
	}
	mustRun(t, dir, "verify")
	if r := rathCLI(t, t.TempDir(), "worker", "--workspace-root", filepath.Join(root, "missing")); r.code != ExitUsage || !strings.Contains(r.stderr, "--workspace-root") {
		t.Errorf("a missing root: exit %d\n%s", r.code, r.stderr)
	}
}

// A worker's --dead-after is a positive duration.
func TestWorker_DeadAfterFlag(t *testing.T) {
	for _, bad := range []string{"0s", "-2s", "soon"} {
		if r := rathCLI(t, t.TempDir(), "worker", "--dead-after", bad); r.code != ExitUsage || !strings.Contains(r.stderr, "--dead-after") {
			t.Errorf("--dead-after %q: exit %d\n%s", bad, r.code, r.stderr)
		}
	}
}

// A worker's --backends takes known names only.
func TestWorker_BackendsFlag(t *testing.T) {
	for _, bad := range []string{"docker", ",", "local,nope"} {
		if r := rathCLI(t, t.TempDir(), "worker", "--backends", bad); r.code != ExitUsage || !strings.Contains(r.stderr, "--backends") {
			t.Errorf("--backends %q: exit %d\n%s", bad, r.code, r.stderr)
		}
	}
}

// A submitted run's parameters reach the worker's policy (fleet.Policy,
// whose own table tests the rules): workspace, backend, cassette and
// the MCP servers it brings, unless any is allowed.
func TestWorkerPolicy_CheckSubmitted(t *testing.T) {
	strict := fleet.Policy{Servers: map[string]mcptool.Server{"gh": {Command: "gh-mcp"}}}
	open := fleet.Policy{Backends: []string{"local"}, SubmittedMCP: true}
	rooted := fleet.Policy{WorkspaceRoot: t.TempDir()}
	for _, tc := range []struct {
		name   string
		policy fleet.Policy
		params map[string]string
		refuse string
	}{
		{"local workspace", strict, map[string]string{"backend": "local", "workspace": "/w"}, `backend "local"`},
		{"allowed local", open, map[string]string{"backend": "local", "workspace": "/w"}, ""},
		{"a cassette elsewhere", rooted, map[string]string{"kind": "scripted", "cassette": "/etc/passwd"}, `cassette "/etc/passwd"`},
		{"brought command", strict, map[string]string{rath.ParamMCP: `{"x":{"command":"sh","args":["-c","id"]}}`}, `MCP server "x" (command "sh -c id")`},
		{"the configured server itself", strict, map[string]string{rath.ParamMCP: `{"gh":{"command":"gh-mcp"}}`}, ""},
		{"brought command, any allowed", open, map[string]string{rath.ParamMCP: `{"x":{"command":"sh"}}`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := rath.ParseAgentSpec(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.policy.CheckAgent(spec)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, fleet.ErrRefused) || !strings.Contains(err.Error(), tc.refuse) {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.refuse)
			}
		})
	}
}

// A submitter who writes to the store directly can put a run's input
// session on the local backend while its parameters claim no workspace:
// the worker's runtime has no local backend to open, so the tool call
// fails and nothing runs on the host.
func TestWorker_CraftedPlacementFindsNoBackend(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	mark := filepath.Join(t.TempDir(), "shell-ran")
	cas := writeCassette(t, "done", `c1:run_shell_command:{"cmd":"touch '`+mark+`'"}`)
	ctx := t.Context()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, "go")
	if err == nil {
		input, err = input.To(ctx, "local", work)
	}
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fleet.Open(ctx, rt, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := fl.Submit(ctx, runWorkflow, input, map[string]string{"backend": "bwrap", "tools": "run_shell_command",
		"cassette": cas, "kind": flow.VendorScripted, "system": "s", "max_rounds": "4", "stream": "false"})
	fl.Close()
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, dir)
	mustRun(t, dir, "wait", "--timeout", "2m", id)
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran on the worker's host (%v)", err)
	}
	if evs := mustRun(t, dir, "events", "--run", id, "--json"); !strings.Contains(evs, `unknown sandbox backend`) && !strings.Contains(evs, `backend \"local\"`) {
		t.Fatalf("the tool call does not say why it failed:\n%s", evs)
	}
}
