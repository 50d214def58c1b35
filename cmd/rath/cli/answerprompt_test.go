package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	execpkg "os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// formSchema is a question's schema as an MCP server's form asks: an
// object of primitive fields, with a description that tries to reach
// the terminal raw.
const formSchema = `{"type":"object","properties":{
	"n": {"type":"integer","minimum":1,"description":"how many \u001b[31mreplicas"},
	"color": {"type":"string","enum":["red","green"]},
	"dry_run": {"type":"boolean"},
	"note": {"type":"string"}},
	"required":["n","color"]}`

// askingForm is a program's workflow that asks a person to fill in
// formSchema, with a question that tries to set the terminal's title.
func askingForm() flow.Workflow {
	return flow.Named("ask", flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		ans, err := flow.Ask(ctx, s, flow.Question{Text: "Scale \x1b]0;pwned\x07up?", Schema: json.RawMessage(formSchema)})
		if err != nil {
			return s, err
		}
		return s.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "form: " + string(ans)})
	}))
}

// storeWaitingOn starts wf as a program does, in a new store on SQLite,
// and returns the store's directory and the run, which waits for a
// person.
func storeWaitingOn(t *testing.T, name string, wf flow.Workflow) (dir, run string) {
	t.Helper()
	store, run := waitingOn(t, "sqlite", name, wf)
	return store[1], run
}

// waitingOn starts wf as a program does, in a new store of backend, and
// returns the store's flags (storeFor) and the run, which waits for a
// person.
func waitingOn(t *testing.T, backend, name string, wf flow.Workflow) (store []string, run string) {
	t.Helper()
	store = storeFor(t, backend)
	opts := rath.Options{Dir: store[1]}
	if backend == "postgres" {
		opts.DSN = store[3]
	}
	ctx := t.Context()
	rt, err := rath.OpenWith(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	in, err := rt.NewUserSession(ctx, "scale up")
	if err != nil {
		t.Fatal(err)
	}
	r, err := rt.Start(ctx, name, wf, in)
	if !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v", err)
	}
	return store, r.ID
}

// terminal is a process run on a pseudo-terminal, as a person runs it.
type terminal struct {
	t    *testing.T
	cmd  *execpkg.Cmd
	ptmx *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // how far expect has read
	done chan struct{}
}

func startAtTerminal(t *testing.T, bin string, argv ...string) *terminal {
	t.Helper()
	cmd := execpkg.Command(bin, argv...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + t.TempDir()}
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return // EIO once the process has gone
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); ptmx.Close() })
	return term
}

// expect waits for text in what the terminal shows after the last
// expected text.
func (term *terminal) expect(text string) {
	term.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		term.mu.Lock()
		shown := term.out.String()
		term.mu.Unlock()
		if i := strings.Index(shown[term.seen:], text); i >= 0 {
			term.seen += i + len(text)
			return
		}
	}
	term.t.Fatalf("the terminal never showed %q; it shows:\n%s", text, term.shown())
}

// send types a line.
func (term *terminal) send(line string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(line + "\n")); err != nil {
		term.t.Fatal(err)
	}
}

func (term *terminal) shown() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// wait is the process's exit code, once its output is read.
func (term *terminal) wait() int {
	term.t.Helper()
	err := term.cmd.Wait()
	<-term.done
	var ee *execpkg.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		term.t.Fatal(err)
	}
	return 0
}

// At a terminal, rath answer without --json asks for the question's
// fields one by one, asks again for what does not match the schema,
// shows the whole answer and records it only on "y": a "n" writes
// nothing. What the question says reaches the terminal escaped.
func TestAnswer_AtATerminalAsksFieldByField(t *testing.T) {
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			answerAtATerminal(t, backend)
		})
	}
}

func answerAtATerminal(t *testing.T, backend string) {
	store, _ := waitingOn(t, backend, "asking", askingForm())
	bin := stockRath(t)
	rath := func(argv ...string) result {
		return rathEnv(t, bareEnv(t), append(slices.Clip(store), argv...)...)
	}
	id := strings.TrimSpace(rath("approvals", "-q").stdout)
	if !requestID.MatchString(id) {
		t.Fatalf("rath approvals -q: %q", id)
	}
	fill := func(term *terminal) {
		t.Helper()
		term.expect("question " + id + ": Scale ")
		term.expect("n (integer, required) how many ")
		for _, bad := range []string{"zero", "0"} {
			term.send(bad)
			term.expect("not valid")
			term.expect("n (integer, required)")
		}
		term.send("3")
		term.expect("color (string, required, one of red | green): ")
		term.send("blue")
		term.expect("not valid")
		term.send("green")
		term.expect("dry_run (boolean, Enter to leave out, y or n): ")
		term.send("y")
		term.expect("note (string, Enter to leave out): ")
		term.send("")
		term.expect(`answer: {"color":"green","dry_run":true,"n":3}`)
		term.expect("record this answer? [y/N] ")
	}

	log := rath("events", "--json").stdout
	declined := startAtTerminal(t, bin, append(slices.Clip(store), "answer", id, "--as", "ops")...)
	fill(declined)
	declined.send("n")
	if code := declined.wait(); code != ExitFailure || !strings.Contains(declined.shown(), "not recorded") {
		t.Fatalf("declined: exit %d\n%s", code, declined.shown())
	}
	if rath("events", "--json").stdout != log {
		t.Fatal("a declined answer changed the log")
	}

	answered := startAtTerminal(t, bin, append(slices.Clip(store), "answer", id, "--as", "ops")...)
	fill(answered)
	answered.send("y")
	if code := answered.wait(); code != 0 || !strings.Contains(answered.shown(), id+" answered by ops") {
		t.Fatalf("answered: exit %d\n%s", code, answered.shown())
	}
	for _, term := range []*terminal{declined, answered} {
		if shown := term.shown(); strings.ContainsRune(shown, 0x1b) || strings.ContainsRune(shown, 0x07) {
			t.Fatalf("the question reached the terminal raw:\n%q", shown)
		}
	}
	decided := rath("events", "--type", events.TypeApprovalDecided, "--json").stdout
	if !strings.Contains(decided, `"answer":"{\"color\":\"green\",\"dry_run\":true,\"n\":3}"`) || !strings.Contains(decided, `"by":"ops"`) {
		t.Fatalf("the recorded decision:\n%s", decided)
	}
	if r := rath("approvals", "-q"); r.stdout != "" {
		t.Fatalf("still pending: %q", r.stdout)
	}
}

// Without a terminal, rath answer needs --json and says so; a tool call
// or a decided question is refused before anything is asked.
func TestAnswer_AsksOnlyAtATerminal(t *testing.T) {
	t.Parallel()
	dir, _ := storeWaitingOn(t, "asking", askingForm())
	rath := func(argv ...string) result {
		return rathEnv(t, bareEnv(t), append([]string{"--dir", dir}, argv...)...)
	}
	id := strings.TrimSpace(rath("approvals", "-q").stdout)
	if r := rath("answer", id, "--as", "ops"); r.code != ExitUsage || !strings.Contains(r.stderr, "--json is required when the input is not a terminal") {
		t.Fatalf("answer from a pipe: exit %d\n%s", r.code, r.stderr)
	}
	if r := rath("answer", id, "--as", "ops", "--json", `{"n":2,"color":"red"}`); r.code != 0 {
		t.Fatalf("answer --json: exit %d\n%s", r.code, r.stderr)
	}
	term := startAtTerminal(t, stockRath(t), "--dir", dir, "answer", id, "--as", "ann")
	if code := term.wait(); code != ExitFailure || !strings.Contains(term.shown(), "decided already: answered by ops") {
		t.Fatalf("answer of a decided question: exit %d\n%s", code, term.shown())
	}
}

// The prompt's fields, types and re-asking, and a question whose schema
// is not a form (asked as one JSON value), from typed lines.
func TestPromptAnswer(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		typed  string
		want   string
		err    error
	}{
		{"a form", formSchema, "x\n4\nred\nmaybe\nno\nhello\ny\n", `{"color":"red","dry_run":false,"n":4,"note":"hello"}`, nil},
		{"optional fields left out", formSchema, "1\ngreen\n\n\nyes\n", `{"color":"green","n":1}`, nil},
		{"a number", `{"type":"object","properties":{"t":{"type":"number","maximum":1}}}`, "1.5\n0.25\ny\n", `{"t":0.25}`, nil},
		{"declined", formSchema, "1\ngreen\n\n\n\n", "", errNotRecorded},
		{"input ends", formSchema, "1\n", "", errInputEnded},
		{"one string, of choices", `{"type":"string","enum":["yes","no"]}`, "maybe\nno\ny\n", `"no"`, nil},
		{"one integer", `{"type":"integer","maximum":9}`, "10\n4\ny\n", `4`, nil},
		{"not a form: JSON", `{"type":"array","items":{"type":"string"}}`, "[1]\n[\"a\", \"b\"]\ny\n", `["a","b"]`, nil},
		{"no schema: any JSON", "", "not json\n{\"k\": true}\ny\n", `{"k":true}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			req := &events.ApprovalRequested{ID: "apr-1", Kind: events.ApprovalQuestion, Question: "?", Schema: canonical(t, tt.schema)}
			got, err := promptAnswer(bufio.NewReader(strings.NewReader(tt.typed)), &out, req)
			if !errors.Is(err, tt.err) || string(got) != tt.want {
				t.Fatalf("answer %s, %v; want %s, %v\n%s", got, err, tt.want, tt.err, out.String())
			}
		})
	}
}

// canonical is schema as a question stores it.
func canonical(t *testing.T, schema string) string {
	t.Helper()
	if schema == "" {
		return ""
	}
	b, err := events.CanonicalizeJSON([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
