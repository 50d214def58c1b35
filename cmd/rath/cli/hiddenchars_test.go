package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A command written to display as `X=ls -la # rm -f important.txt`
// while it runs rm: `rath approvals`, `rath show` and the dossier, each a
// process of its own, show its bidi and zero-width characters escaped,
// flag it, and show a long argument in full.
func TestApprovals_HiddenCharactersShownEscaped(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers": {}, "approvals": [{"tool": "run_shell_command", "command_matches": "\\brm\\b"}]}`), 0o644)
	env := []string{"RATH_HOME=" + home}
	store := t.TempDir()
	rath := func(argv ...string) result { return rathExit(t, env, append([]string{"--dir", store}, argv...)...) }

	trojan := "X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069 ; echo a\u200bb"
	escaped := `X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069 ; echo a\u200bb`
	long := strings.Repeat("0123456789", 30) + "END"
	call, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "name": "run_shell_command",
		"arguments": map[string]string{"cmd": trojan + " " + long}}}})
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(`{"scripted": true, "description": "trojan", "responses": [`+string(call)+`, {"content": "done"}]}`), 0o644)
	r := rath("run", "--cassette", cas, "--workspace", t.TempDir(), "--tools", "run_shell_command", "--no-stream", "list files")
	if r.code != ExitWaiting {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	run := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)[1]
	check := func(what, out string) {
		t.Helper()
		for _, want := range []string{escaped, "contains invisible or direction-changing characters", long} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not show %q:\n%s", what, want, out)
			}
		}
		if strings.ContainsAny(out, "\u2066\u2067\u2069\u200b") {
			t.Errorf("%s prints hidden characters raw:\n%q", what, out)
		}
	}
	check("rath approvals", rath("approvals").stdout)
	check("the waiting run's message", r.stderr)
	pend := decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout)
	if len(pend) != 1 || pend[0].Shown.Warning == "" || len(pend[0].Shown.Fields) != 1 || pend[0].Shown.Fields[0].Name != "cmd" {
		t.Fatalf("approvals --json: %+v", pend)
	}
	check("rath show", rath("show", pend[0].Session).stdout)
	html := filepath.Join(t.TempDir(), "d.html")
	if r := rath("dossier", run, "-o", html); r.code != 0 {
		t.Fatalf("dossier: exit %d\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(html)
	i := strings.Index(string(b), `<section id="approvals">`)
	if i < 0 {
		t.Fatal("the dossier has no approvals section")
	}
	section := string(b[i:])
	section = section[:strings.Index(section, "</section>")]
	check("the dossier's approvals", section)
	// Markdown escapes its own punctuation: read it as rendered.
	md := strings.NewReplacer(`\\`, `\`, `\#`, `#`, `\_`, `_`).Replace(rath("dossier", run, "--format", "md").stdout)
	md = md[strings.Index(md, "## Approvals and questions"):]
	check("the markdown dossier's approvals", md[:strings.Index(md, "\n## ")])
	// Elsewhere in the dossier (event summaries) bidi controls are
	// escaped too; zero-width characters are left to the approvals.
	if whole := rath("dossier", run, "--format", "md").stdout; strings.ContainsAny(whole, "\u2066\u2067\u2069") {
		t.Errorf("the markdown dossier prints bidi controls raw")
	}
}
