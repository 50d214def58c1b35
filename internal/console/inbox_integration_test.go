//go:build integration

package console_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gorath/rath"
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
