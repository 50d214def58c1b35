package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// rathExit runs the test binary as rath, a process of its own, and
// returns what it printed and its exit code.
func rathExit(t *testing.T, env []string, argv ...string) result {
	t.Helper()
	cmd := execpkg.Command(os.Args[0], argv...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
	return runResult(t, cmd)
}

// runResult runs cmd and returns what it printed and its exit code; a
// failure to run it at all fails the test.
func runResult(t *testing.T, cmd *execpkg.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *execpkg.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

const approveCassette = `{"scripted": true, "description": "Scripted: run a shell command, then report.", "responses": [
 {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo approved > out.txt && cat out.txt"}}]},
 {"expect": "approved", "content": "The command ran and wrote out.txt."}
]}`

const rejectCassette = `{"scripted": true, "description": "Scripted: try to delete, read the rejection, give up.", "responses": [
 {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "rm -rf data\u001b[2J"}}]},
 {"expect": "too risky", "content": "Understood: I left data alone."}
]}`

var requestID = regexp.MustCompile(`apr-[0-9a-f]{16}`)

// The end-to-end scenario: a run suspends on a shell command and
// its process exits 5; other processes list, approve, and resume it; a
// second run (its rule from the config file) is rejected and the model
// reads the reason; both replay exactly, and the dossier and show carry
// both decisions. Bad decisions fail and write nothing.
func TestApprovals_SuspendApproveRejectResumeReplay(t *testing.T) {
	t.Parallel()
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			testApprovalsCLI(t, store)
		})
	}
}

func testApprovalsCLI(t *testing.T, store []string) {
	home := t.TempDir()
	env := []string{"RATH_HOME=" + home}
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers": {}, "approvals": [{"tool": "run_shell_command", "command_matches": "\\brm\\b"}]}`), 0o644)
	ws := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(filepath.Join(ws, "data"), 0o755)
	cas1, cas2 := filepath.Join(t.TempDir(), "approve.json"), filepath.Join(t.TempDir(), "reject.json")
	os.WriteFile(cas1, []byte(approveCassette), 0o644)
	os.WriteFile(cas2, []byte(rejectCassette), 0o644)
	rath := func(argv ...string) result {
		return rathExit(t, env, append(append([]string(nil), store...), argv...)...)
	}

	// 1. Suspends: exit 5, says how to answer, writes no file.
	r := rath("run", "--cassette", cas1, "--workspace", ws, "--tools", "run_shell_command", "--approve", "run_shell_command", "--no-stream", "write", "out")
	if r.code != ExitWaiting || !strings.Contains(r.stderr, "rath approve") || !strings.Contains(r.stderr, "rath resume run-") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	run1 := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)[1]
	id1 := requestID.FindString(r.stderr)
	if !strings.Contains(r.stdout, id1+" waits for a person: run_shell_command") {
		t.Fatalf("the transcript does not show the request:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("the command ran before it was approved")
	}
	if out := rath("runs").stdout; !strings.Contains(out, run1) || !strings.Contains(out, "waiting") {
		t.Fatalf("runs:\n%s", out)
	}
	// wait returns on a waiting run with its request and how to decide it.
	if r := rath("wait", "--timeout", "2m", run1); r.code != ExitWaiting || !strings.Contains(r.stdout, run1+"\twaiting") ||
		!strings.Contains(r.stderr, id1) || !strings.Contains(r.stderr, "echo approved") || !strings.Contains(r.stderr, "rath approve ID") {
		t.Fatalf("wait on a waiting run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A waiting run replays as far as it went, asking nobody.
	if r := rath("replay", run1); r.code != 0 || !strings.Contains(r.stdout, "reproduced") {
		t.Fatalf("replay of the waiting run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pend := decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout)
	if len(pend) != 1 || pend[0].ID != id1 || pend[0].Tool != "run_shell_command" || !strings.Contains(string(pend[0].Arguments), "echo approved") {
		t.Fatalf("approvals: %+v", pend)
	}

	// 2. Bad decisions: exit non-zero, nothing written.
	head := rath("events", "--json").stdout
	for _, bad := range []struct {
		argv []string
		code int
		says string
	}{
		{[]string{"approve", "apr-0000000000000000", "--as", "alice"}, ExitFailure, "no request"},
		{[]string{"reject", id1, "--as", "alice"}, ExitUsage, "--reason"},
		{[]string{"answer", id1, "--json", `{"a":1}`, "--as", "alice"}, ExitFailure, "a tool call is approved or rejected"},
		{[]string{"approve", id1, "--as", "alice", "--args", "[1"}, ExitFailure, "not a JSON object"},
	} {
		if r := rath(bad.argv...); r.code != bad.code || !strings.Contains(r.stderr, bad.says) {
			t.Errorf("rath %v: exit %d, want %d saying %q\n%s", bad.argv, r.code, bad.code, bad.says, r.stderr)
		}
	}
	if rath("events", "--json").stdout != head {
		t.Fatal("a refused decision changed the log")
	}

	// 3. Another process approves; resuming finishes the run.
	if r := rath("approve", id1, "--as", "alice", "--note", "safe"); r.code != 0 || !strings.Contains(r.stdout, "approved by alice") {
		t.Fatalf("approve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rath("approve", id1, "--as", "bob"); r.code != ExitFailure || !strings.Contains(r.stderr, "decided already") {
		t.Fatalf("approve twice: exit %d\n%s", r.code, r.stderr)
	}
	if r := rath("resume", run1); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "approved\n" {
		t.Fatalf("out.txt: %q %v", b, err)
	}

	// 4. The second run: the config file's rule stops rm; a rejection
	// reaches the model (its cassette expects the reason) and the run
	// finishes ok.
	r = rath("run", "--cassette", cas2, "--workspace", ws, "--tools", "run_shell_command", "--no-stream", "clean", "up")
	if r.code != ExitWaiting {
		t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, "\x1b") {
		t.Fatalf("a raw escape reached the terminal: %q", r.stderr)
	}
	run2 := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)[1]
	id2 := requestID.FindString(r.stderr)
	if r := rath("reject", id2, "--reason", "too risky: keep data"); r.code != 0 {
		t.Fatalf("reject: exit %d\n%s", r.code, r.stderr)
	}
	r = rath("resume", run2)
	if r.code != 0 {
		t.Fatalf("resume 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "data")); err != nil {
		t.Fatal("the rejected command ran")
	}
	// resume streams as run does: the tool's result, then run and session.
	m := regexp.MustCompile(`(?m)^session: (s-\S+)$`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "← run_shell_command") || !strings.Contains(r.stdout, "run: "+run2) {
		t.Fatalf("resume 2 did not stream the run:\n%s", r.stdout)
	}
	out2 := m[1]
	show := rath("show", out2).stdout
	if !strings.Contains(show, "too risky: keep data") || !strings.Contains(show, "rejected by") || !strings.Contains(show, id2) {
		t.Fatalf("show does not mark the rejection:\n%s", show)
	}

	// 5. Both replay exactly, and the dossiers hold both decisions.
	for _, run := range []string{run1, run2} {
		if r := rath("replay", run); r.code != 0 || !strings.Contains(r.stdout, "reproduced") {
			t.Fatalf("replay %s: exit %d\n%s%s", run, r.code, r.stdout, r.stderr)
		}
	}
	md1 := rath("dossier", run1, "--format", "md").stdout
	md2 := rath("dossier", run2, "--format", "md").stdout
	if !strings.Contains(md1, id1) || !strings.Contains(md1, "approved") || !strings.Contains(md1, "alice") ||
		!strings.Contains(md2, id2) || !strings.Contains(md2, "rejected") || !strings.Contains(md2, "too risky") {
		t.Fatalf("dossiers lack the decisions:\n%s\n%s", md1, md2)
	}
	html := filepath.Join(t.TempDir(), "d.html")
	if r := rath("dossier", run1, "-o", html); r.code != 0 {
		t.Fatalf("dossier html: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(html); !strings.Contains(string(b), `id="`+id1+`"`) || !strings.Contains(string(b), "approved by alice: safe") {
		t.Fatal("the HTML dossier lacks the approval")
	}
	jl := rath("dossier", run2, "--format", "jsonl").stdout
	if !strings.Contains(jl, `"approvals":[{"id":"`+id2) {
		t.Fatalf("the JSONL dossier lacks the rejection:\n%.400s", jl)
	}
	if pend := decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout); len(pend) != 0 {
		t.Fatalf("still pending: %+v", pend)
	}
	// The chain verifies and the projections (approvals, run statuses)
	// equal a rebuild of the log.
	if r := rath("verify"); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// asking is a program's workflow that asks a person for a number.
func asking() flow.Workflow {
	return flow.Named("ask", flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		ans, err := flow.Ask(ctx, s, flow.Question{Text: "How many \x1b[31mreplicas?",
			Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)})
		if err != nil {
			return s, err
		}
		return s.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "replicas: " + string(ans)})
	}))
}

// A program's workflow asks a question; rath approvals shows it (escaped),
// rath answer refuses an answer that does not match the schema (nothing
// written) and records one that does, rath resume finishes the run, and
// it replays.
func TestApprovals_AnswerAQuestion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir, run := storeWaitingOn(t, "asking", asking())
	cfg := Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
		rt.Register("asking", asking())
		return nil
	}}
	cli := func(argv ...string) result {
		var out, errb bytes.Buffer
		code := Run(ctx, cfg, append([]string{"--dir", dir}, argv...), strings.NewReader(""), &out, &errb)
		return result{stdout: out.String(), stderr: errb.String(), code: code}
	}
	list := cli("approvals")
	if strings.Contains(list.stdout, "\x1b") || !strings.Contains(list.stdout, `How many \x1b[31mreplicas?`) {
		t.Fatalf("approvals:\n%q", list.stdout)
	}
	id := requestID.FindString(list.stdout)
	head := cli("events", "--json").stdout
	for _, bad := range []string{`{"n":0}`, `{"n":"two"}`, `{}`, `{"n":`} {
		if r := cli("answer", id, "--json", bad, "--as", "ops"); r.code != ExitFailure || !strings.Contains(r.stderr, id) {
			t.Errorf("answer %s: exit %d\n%s", bad, r.code, r.stderr)
		}
	}
	if r := cli("answer", id, "--as", "ops"); r.code != ExitUsage {
		t.Errorf("answer without --json: exit %d", r.code)
	}
	if cli("events", "--json").stdout != head {
		t.Fatal("refused answers changed the log")
	}
	if r := cli("resume", run); r.code != ExitWaiting || !strings.Contains(r.stderr, id) {
		t.Fatalf("resume before the answer: exit %d\n%s", r.code, r.stderr)
	}
	if r := cli("answer", id, "--json", `{"n": 3}`, "--as", "ops"); r.code != 0 || !strings.Contains(r.stdout, "answered by ops") {
		t.Fatalf("answer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := cli("resume", run)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	out := regexp.MustCompile(`(?m)^session: (s-\S+)$`).FindStringSubmatch(r.stdout)
	if out == nil {
		t.Fatalf("resume printed no session:\n%s", r.stdout)
	}
	if show := cli("show", out[1]).stdout; !strings.Contains(show, `replicas: {"n":3}`) || !strings.Contains(show, "answered by ops") {
		t.Fatalf("show:\n%s", show)
	}
	if r := cli("replay", run); r.code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
