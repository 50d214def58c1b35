package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cassette = `{"scripted": true, "description": "write a file, read it back, answer",
 "responses": [
  {"tool_calls": [{"id": "c1", "name": "write_workspace_file", "arguments": {"path": "hello.txt", "content": "hi there\n"}}]},
  {"tool_calls": [{"id": "c2", "name": "run_shell_command", "arguments": {"cmd": "cat hello.txt; ls"}}]},
  {"content": "I wrote hello.txt and read it back."}
 ]}`

func TestRunReplayResume(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(work, 0o755)
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(cassette), 0o644)

	out := mustRun(t, dir, "run", "--cassette", cas, "--workspace", work, "--tools", "write_workspace_file,run_shell_command", "write", "a", "file")
	for _, want := range []string{"→ write_workspace_file", "files: hello.txt", "→ run_shell_command", "← run_shell_command exit 0", "I wrote hello.txt and read it back.", "run: run-", "session: s-"} {
		if !strings.Contains(out, want) {
			t.Fatalf("run output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(work, "hello.txt")); err != nil || string(b) != "hi there\n" {
		t.Fatalf("the tool did not write the file: %q %v", b, err)
	}
	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(runs) != 1 || runs[0].Workflow != runWorkflow || runs[0].Status != "done" {
		t.Fatalf("runs = %+v", runs)
	}
	id := runs[0].ID

	if out := mustRun(t, dir, "replay", id); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
	// Live tools re-run in a fresh copy of the workspace as it was.
	if out := mustRun(t, dir, "replay", "--live-tools", id); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay --live-tools: %s", out)
	}
	// A file the run wrote is put back to its recorded "before" state
	// (absent) in the copy, so its later change does not matter...
	os.WriteFile(filepath.Join(work, "hello.txt"), []byte("changed since\n"), 0o644)
	if r := rathCLI(t, dir, "replay", "--live-tools", id); r.code != 0 {
		t.Fatalf("live-tools replay should restore the files the run touched: exit %d\n%s", r.code, r.stdout)
	}
	// ...but a new file in the workspace changes what ls prints: it diverges.
	os.WriteFile(filepath.Join(work, "other.txt"), nil, 0o644)
	r := rathCLI(t, dir, "replay", "--live-tools", id)
	if r.code != ExitDiverged || !strings.Contains(r.stdout, "other.txt") || !strings.Contains(r.stdout, "tool.returned") {
		t.Fatalf("live-tools replay in a changed environment: exit %d\n%s", r.code, r.stdout)
	}
	// A plain replay never looks at the workspace.
	if out := mustRun(t, dir, "replay", id); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
	if r := rathCLI(t, dir, "resume", id); r.code != 1 || !strings.Contains(r.stderr, "not resumable") {
		t.Fatalf("resume of a finished run: exit %d %s", r.code, r.stderr)
	}
	if r := rathCLI(t, dir, "replay", "run-nope"); r.code != 1 {
		t.Fatalf("replay of an unknown run: exit %d", r.code)
	}
	if r := rathCLI(t, dir, "run"); r.code != 2 {
		t.Fatalf("run without a prompt: exit %d", r.code)
	}
	if r := rathCLI(t, dir, "run", "--tools", "teleport", "--cassette", cas, "x"); r.code != ExitUsage || !strings.Contains(r.stderr, "run_shell_command") || !strings.Contains(r.stderr, "Try: ") {
		t.Fatalf("unknown tool: exit %d %s", r.code, r.stderr)
	}
}

func TestDemoCommand(t *testing.T) {
	// A key in the environment must not make the demo go live: only --live does.
	t.Setenv("OPENAI_API_KEY", "sk-demo-must-not-use-this")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	dir := t.TempDir()
	out := mustRun(t, dir, "demo")
	for _, want := range []string{"scripted cassette (not a real model)", "2 forks", "replay           reproduced", "verify           ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " | rath") {
		t.Errorf("the closing hints paste as a pipe:\n%s", out)
	}
	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(runs) != 1 || runs[0].Workflow != "demo" {
		t.Fatalf("runs = %+v", runs)
	}
	if out := mustRun(t, dir, "replay", runs[0].ID); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay of the demo: %s", out)
	}
	// The demo's tools print the same for the same code: they reproduce
	// when run again in a fresh copy of the workspace.
	if r := rathCLI(t, dir, "replay", "--live-tools", runs[0].ID); r.code != 0 || !strings.Contains(r.stdout, "reproduced: ") {
		t.Fatalf("replay --live-tools of the demo: exit %d\n%s", r.code, r.stdout)
	}
	html := filepath.Join(t.TempDir(), "d.html")
	mustRun(t, dir, "dossier", runs[0].ID, "--replay", "-o", html)
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "reproduced") {
		t.Fatalf("dossier html: %v (%d bytes)", err, len(b))
	}
	if md := mustRun(t, dir, "dossier", runs[0].ID, "--format", "md"); !strings.Contains(md, "textkit.py") {
		t.Fatalf("dossier md lacks the file diffs:\n%.500s", md)
	}
	if r := rathCLI(t, dir, "dossier", runs[0].ID, "--format", "pdf"); r.code != 2 {
		t.Fatalf("--format pdf: exit %d", r.code)
	}
}

// run --json prints the run's events as JSON Lines as they are recorded,
// then a summary object; nothing else reaches stdout.
func TestRun_JSONLines(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(work, 0o755)
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(cassette), 0o644)
	out := mustRun(t, dir, "run", "--json", "--cassette", cas, "--workspace", work, "--tools", "write_workspace_file,run_shell_command", "write", "a", "file")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var types []string
	var runID string
	for _, l := range lines[:len(lines)-1] {
		var ev struct {
			Seq   int64  `json:"seq"`
			Type  string `json:"type"`
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq == 0 {
			t.Fatalf("not an event line: %q (%v)", l, err)
		}
		if runID == "" {
			runID = ev.RunID
		}
		if ev.RunID != runID {
			t.Fatalf("an event of another run: %q", l)
		}
		types = append(types, ev.Type)
	}
	sum := decodeJSON[runEnd](t, lines[len(lines)-1])
	if !sum.Summary || sum.Status != "done" || sum.Run != runID || sum.Output == "" {
		t.Fatalf("summary = %+v (run %s)", sum, runID)
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"run.started", "tool.called", "tool.returned", "provider.called", "run.finished"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("events %v lack %s", types, want)
		}
	}
	if types[0] != "run.started" || types[len(types)-1] != "run.finished" {
		t.Fatalf("events %v do not run from run.started to run.finished", types)
	}
}

// run and submit check the agent their flags describe (rath.AgentSpec)
// before the store is touched: a round cap below zero is a usage error
// naming the parameter, and nothing is recorded or queued.
func TestRunAndSubmit_CheckTheAgentSpec(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(repoRoot(t), "examples", "cassettes", "write_and_check.json")
	for _, cmd := range []string{"run", "submit"} {
		r := rathCLI(t, dir, cmd, "--max-rounds", "-1", "--cassette", cas, "Write hello.txt")
		if r.code != ExitUsage || !strings.Contains(r.stderr, "max_rounds") || !strings.Contains(r.stderr, "want 0 (the default) or more") {
			t.Fatalf("%s --max-rounds -1: exit %d %s", cmd, r.code, r.stderr)
		}
	}
	if r := rathCLI(t, dir, "runs", "--json"); r.code == 0 && strings.Contains(r.stdout, "run-") {
		t.Fatalf("a refused run was recorded: %s", r.stdout)
	}
}
