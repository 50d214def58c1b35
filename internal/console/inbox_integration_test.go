//go:build integration

package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/session"
)

// trojan displays as `X=ls -la # rm -f important.txt` where bidi is drawn:
// the command that runs is rm.
const trojan = "X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069"

// A request whose arguments hold bidi controls and zero-width characters
// is drawn by Chromium with each of them escaped, a warning, and every
// field in full: what the approver reads is what would run.
func TestConsole_InboxShowsHiddenCharacters(t *testing.T) {
	exe := chromium(t)
	rt := newRuntime(t)
	sh, err := flow.NewTool("run_shell_command", "Runs a command.", func(context.Context, *session.Session, struct {
		Cmd string `json:"cmd"`
	}) (string, error) {
		return "ran", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("0123456789", 40) + "END"
	args := `{"cmd":"` + trojan + `","note":"a\u200bb","long":"` + long + `"}`
	p := flow.Scripted(scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "run_shell_command", Arguments: args}}},
		scripted.Entry{Content: "done"})
	agent, err := flow.NewAgent("Run it.", p, flow.WithTools(sh), flow.WithApproval("run_shell_command", flow.Always()))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := rt.NewUserSession(t.Context(), "list the files")
	if _, err := rt.Start(t.Context(), "trojan", agent, in, rath.WithRunID("run-trojan")); !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v", err)
	}

	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()

	if err := chromedp.Do(ctx,
		chromedp.Navigate(hs.URL+"/#/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`#approvals .approval`)),
	); err != nil {
		t.Fatal(err)
	}
	// innerText is the text as laid out and drawn, not the DOM's.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#approvals .approval').innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069`,
		`a\u200bb`,
		"contains invisible or direction-changing characters",
		long,
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the inbox does not show %q:\n%s", want, shown)
		}
	}
	if strings.ContainsAny(shown, "\u2066\u2067\u2069\u200b") {
		t.Errorf("the inbox draws hidden characters raw:\n%q", shown)
	}
}

// formQuestion is an MCP-style form: an object of primitive fields, one
// of whose descriptions tries to reach the page raw.
const formQuestion = `{"type":"object","properties":{
	"n": {"type":"integer","minimum":1,"description":"how many \u001b[31mreplicas \u202e"},
	"color": {"type":"string","enum":["red","green"]},
	"dry_run": {"type":"boolean"},
	"note": {"type":"string"}},
	"required":["n","color"]}`

// A question whose schema is a form is answered in the console field by
// field: the fields are drawn in order with their descriptions escaped,
// a required one left empty is refused in the page, a value the schema
// refuses is refused by the server (the request stays pending), and the
// answer recorded is the one the fields hold.
func TestConsole_AnswersAFormQuestion(t *testing.T) {
	rt := newRuntime(t)
	ask := flow.Named("ask", flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		ans, err := flow.Ask(ctx, s, flow.Question{Text: "Scale up?", Schema: json.RawMessage(formQuestion)})
		if err != nil {
			return s, err
		}
		return s.Append(ctx, session.Chunk{Role: events.RoleUser, Content: string(ans)})
	}))
	in, _ := rt.NewUserSession(t.Context(), "scale")
	if _, err := rt.Start(t.Context(), "ask", ask, in, rath.WithRunID("run-form")); !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v", err)
	}
	pending, err := rt.Reader().PendingApprovals(t.Context())
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v %+v", err, pending)
	}
	id := pending[0].ID
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	p := openPage(t, srv)
	p.step("the inbox", chromedp.Navigate(p.url+"/#/approvals"), chromedp.WaitVisible(chromedp.CSS(`#approvals .approval .answer-form`)), p.shot("form.png"))
	labels := p.text(`Array.from(document.querySelectorAll('.answer-form .answer-label')).map(l => l.innerText.trim()).join("\n")`)
	for _, want := range []string{`n (integer, required) how many \x1b[31mreplicas \u202e`, "color (string, required)", "dry_run (boolean)", "note (string)"} {
		if !strings.Contains(labels, want) {
			t.Errorf("the form's labels lack %q:\n%s", want, labels)
		}
	}
	if strings.Index(labels, "n (integer") > strings.Index(labels, "color (") || strings.Index(labels, "color (") > strings.Index(labels, "dry_run (") {
		t.Errorf("the fields are not in order (required first, then by name):\n%s", labels)
	}
	field := func(name string) string { return `document.querySelector('.answer-form [data-field="` + name + `"]')` }
	status := `document.getElementById("status").textContent`
	p.step("a required field left empty", chromedp.Evaluate[chromedp.Void](`document.querySelector('.answer-go').click()`), until(status+`.includes("n is required")`))
	p.step("a value the schema refuses", chromedp.Evaluate[chromedp.Void](field("n")+`.value = "0"; `+field("color")+`.value = "1"; document.querySelector('.answer-go').click()`),
		until(status+`.includes("minimum")`))
	if st, err := approval.Load(t.Context(), rt.Store(), id); err != nil || !st.Pending() {
		t.Fatalf("after a refused answer: %v, pending %v", err, err == nil && st.Pending())
	}
	p.step("answer", chromedp.Evaluate[chromedp.Void](field("n")+`.value = "3"; `+field("dry_run")+`.value = "0"; document.querySelector('.answer-go').click()`),
		until(`!!document.querySelector('.decided') && document.querySelector('.decided').textContent.includes("answered by")`), p.shot("form-answered.png"))
	st, err := approval.Load(t.Context(), rt.Store(), id)
	if err != nil || st.Pending() {
		t.Fatalf("after the answer: %v", err)
	}
	if got, want := st.Decision.Answer, `{"color":"green","dry_run":true,"n":3}`; got != want {
		t.Fatalf("recorded answer %s, want %s", got, want)
	}
}
