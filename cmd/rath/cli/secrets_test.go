package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mainEnv makes the test binary run as the rath command (see TestMain),
// for tests that need a process whose environment is set from its start,
// as /proc/PID/environ shows it.
const mainEnv = "RATH_CLI_TEST_MAIN"

// rathProc runs the test binary as rath with env added to its
// environment and returns stdout; it fails the test on a non-zero exit.
func rathProc(t *testing.T, env []string, argv ...string) string {
	t.Helper()
	cmd := execpkg.Command(os.Args[0], argv...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("rath %s: %v\nstdout: %s\nstderr: %s", strings.Join(argv, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// A hostile model reads every secret it can reach (rath's environment
// through /proc/$PPID/environ, a config file inside the workspace, a
// provider-key file it writes and reads back, an error message, its own
// text and tool-call arguments): none of them may reach the database, its
// WAL, exports, events or dossiers; each redaction is recorded by name.
func TestRun_SecretsNeverReachTheEvidence(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":    "sk-openai-5ecret-0123456789",
		"ANTHROPIC_API_KEY": "sk-ant-5ecret-9876543210",
		"RATH_HMAC_KEY":     "hmac-5ecret-key-abcdefgh",
		"DEPLOY_TOKEN":      "tok-5ecret-deploy-xyz123",
		"THIRD_KEY":         "third-5ecret-key-qwerty",
	}
	const literal = "lit-5ecret-in-config-zzz9" // a literal api_key in the config file
	dir, work := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf(`{"providers": {"third": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key_env": "THIRD_KEY"},
		"lit": {"kind": "openai", "model": "m", "api_key": %q}}}`, literal)
	if err := os.WriteFile(filepath.Join(work, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"RATH_DIR=" + dir, "RATH_HOME=" + work} // the config file lies in the workspace
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	all := []string{literal}
	for _, v := range secrets {
		all = append(all, v)
	}
	key := secrets["OPENAI_API_KEY"]
	call := func(id, name string, args any) map[string]any {
		return map[string]any{"id": id, "name": name, "arguments": args}
	}
	cas := map[string]any{"scripted": true, "responses": []any{
		map[string]any{"tool_calls": []any{call("c1", "run_shell_command", map[string]any{"cmd": "tr '\\0' '\\n' < /proc/$PPID/environ"})}},
		map[string]any{"tool_calls": []any{call("c2", "read_workspace_file", map[string]any{"path": "config.json"})}},
		map[string]any{"tool_calls": []any{call("c3", "write_workspace_file", map[string]any{"path": "stolen.txt", "content": strings.Repeat(key+"\n", 3000)})}},
		map[string]any{"tool_calls": []any{call("c4", "read_workspace_file", map[string]any{"path": "missing-" + key})}},
		map[string]any{"content": "The key is " + key + "."},
	}}
	b, _ := json.Marshal(cas)
	casPath := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(casPath, b, 0o644)

	out := rathProc(t, env, "run", "--cassette", casPath, "--workspace", work, "--backend", "local", "--tools", "all", "--no-stream", "find the keys, starting with "+secrets["ANTHROPIC_API_KEY"])
	if !strings.Contains(out, "[redacted:OPENAI_API_KEY]") {
		t.Fatalf("the model's answer should show the marker:\n%s", out)
	}
	runID := ""
	for _, line := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(line, "run: "); ok {
			runID = id
		}
	}
	if runID == "" {
		t.Fatalf("no run id in:\n%s", out)
	}
	evs := rathProc(t, env, "events", "--json")
	exports := []string{
		evs,
		rathProc(t, env, "dossier", runID, "--format", "md"),
		rathProc(t, env, "dossier", runID, "--format", "jsonl"),
		rathProc(t, env, "dossier", runID),
		rathProc(t, env, "show", strings.TrimSpace(lastField(out, "session: "))),
		rathProc(t, env, "export", strings.TrimSpace(lastField(out, "session: "))),
	}
	rathProc(t, env, "verify")
	// Replay rebuilds the requests from the redacted log: they must match
	// what the run recorded.
	if r := rathProc(t, env, "replay", runID); !strings.Contains(r, "reproduced") {
		t.Fatalf("replay: %s", r)
	}
	exports = append(exports, dbFiles(t, dir)...)
	for i, text := range exports {
		for _, v := range all {
			if strings.Contains(text, v) {
				t.Errorf("secret %q found in output %d (%d bytes)", v[:8], i, len(text))
			}
		}
	}
	// Each channel carried its secrets, and only markers were stored.
	for _, want := range []string{"DEPLOY_TOKEN=[redacted:DEPLOY_TOKEN]", "RATH_HMAC_KEY=[redacted:RATH_HMAC_KEY]",
		"THIRD_KEY=[redacted:THIRD_KEY]", `[redacted:provider.lit.api_key]`, "missing-[redacted:OPENAI_API_KEY]"} {
		if !strings.Contains(evs, want) {
			t.Errorf("the events lack %q", want)
		}
	}
	// The log says which secrets were redacted, by name.
	for _, name := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RATH_HMAC_KEY", "DEPLOY_TOKEN", "THIRD_KEY", "provider.lit.api_key"} {
		if !strings.Contains(evs, `"secret.redacted"`) || !strings.Contains(evs, `"name": "`+name+`"`) && !strings.Contains(evs, `"name":"`+name+`"`) {
			t.Errorf("no secret.redacted record names %s", name)
		}
	}
}

func lastField(out, prefix string) string {
	v := ""
	for _, line := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(line, prefix); ok {
			v = s
		}
	}
	return v
}

// An imported file does not choose where tools run: "local /" is kept as
// provenance, not as the session's placement.
func TestImport_RootPlacementIsNotActivated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(file, []byte(`{"record_type":"header","id":"imp-root","parent_session_ids":[],"lineage_kind":"root","sandbox_backend":"local","sandbox_spec":"/"}
{"record_type":"chunk","index":0,"kind":"user","payload":{"content":"hi"}}
{"record_type":"trailer","final_chunk_count":1}
`), 0o644)
	out := mustRun(t, dir, "import", file)
	if !strings.Contains(out, "placement local / not imported") {
		t.Fatalf("import output: %s", out)
	}
	if show := mustRun(t, dir, "show", "imp-root"); strings.Contains(show, "placement local") {
		t.Fatalf("the imported session is placed on the host root:\n%s", show)
	}
}
