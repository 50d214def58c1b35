package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The README's rule, command_matches "\brm\b", against commands that
// delete important.txt without the word rm in their text: each run, a
// process of its own, must stop for approval with the file intact. Plain
// commands run without a request.
func TestApprovals_CommandGateHoldsAgainstQuoting(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers": {}, "approvals": [{"tool": "run_shell_command", "command_matches": "\\brm\\b"}]}`), 0o644)
	env := []string{"RATH_HOME=" + home}
	run := func(t *testing.T, cmd string) (result, string) {
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "important.txt"), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		call, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "name": "run_shell_command", "arguments": map[string]string{"cmd": cmd}}}})
		cas := filepath.Join(t.TempDir(), "cassette.json")
		os.WriteFile(cas, []byte(`{"scripted": true, "description": "one shell command", "responses": [`+string(call)+`, {"content": "done"}]}`), 0o644)
		r := rathExit(t, env, "--dir", t.TempDir(), "run", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command", "--no-stream", "go")
		return r, ws
	}
	for _, cmd := range []string{
		`r''m -f important.txt`,
		`"r"m important.txt`,
		`\rm important.txt`,
		`$'\x72m' important.txt`,
		`{rm,important.txt}`,
		`/bin/r?m -f important.txt`,
		`$(printf rm) -f important.txt`,
		`x=rm; $x important.txt`,
		`find . -name important.txt -delete`,
		`eval 'r""m important.txt'`,
		`bash -c 'r""m important.txt'`,
		`echo 'r""m important.txt' | sh`,
		`python3 -c 'import os; os.remove("important.txt")'`,
		`ls() { r''m important.txt; }; ls`,
	} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			r, ws := run(t, cmd)
			if _, err := os.Stat(filepath.Join(ws, "important.txt")); err != nil {
				t.Errorf("the command ran without a request: %v", err)
			}
			if r.code != ExitWaiting {
				t.Errorf("exit %d, want %d (waiting)\n%s%s", r.code, ExitWaiting, r.stdout, r.stderr)
			}
		})
	}
	for _, cmd := range []string{
		`ls -la`,
		`cat important.txt | grep -c keep`,
		`echo "x" > other.txt && wc -l other.txt`,
		`for f in *.txt; do test -f "$f" && echo "$f"; done`,
	} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			if r, _ := run(t, cmd); r.code != 0 {
				t.Errorf("a plain command did not run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
