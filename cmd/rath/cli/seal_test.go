package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `rath keys kek --out FILE` writes a key-encryption key readable by its
// owner only and never overwrites one; a KEK that cannot be loaded
// (RATH_KEK_FILE or the config file's "kek_file") stops a command with a
// non-zero exit that names where it came from, and opens nothing.
func TestRun_KeysKEK(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	kek := filepath.Join(home, "kek")
	r := rathEnv(t, bareEnv(t), "keys", "kek", "--out", kek)
	if r.code != 0 || !strings.Contains(r.stdout, "RATH_KEK_FILE="+kek) {
		t.Fatalf("keys kek: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	st, err := os.Stat(kek)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("the KEK file's mode is %v, want 0600", got)
	}
	before, _ := os.ReadFile(kek)
	if r := rathEnv(t, bareEnv(t), "keys", "kek", "--out", kek); r.code == 0 || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("a second keys kek to the same file: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(kek); !bytes.Equal(before, after) {
		t.Fatal("the second keys kek changed the file")
	}
	if r := rathEnv(t, bareEnv(t), "keys", "kek"); r.code != 2 {
		t.Fatalf("keys kek without --out: exit %d, want 2 (usage)\nstderr: %s", r.code, r.stderr)
	}

	bad := filepath.Join(home, "bad")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"kek_file": "`+bad+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string][]string{
		"RATH_KEK_FILE missing": {"RATH_KEK_FILE=" + filepath.Join(home, "none")},
		"config kek_file bad":   {"RATH_HOME=" + home},
	} {
		t.Run(name, func(t *testing.T) {
			r := rathEnv(t, append(append(bareEnv(t), env...), "RATH_DIR="+dir), "new", "hello")
			if r.code == 0 || !strings.Contains(r.stderr, "key-encryption key") {
				t.Fatalf("exit %d, want a key-encryption key error\nstderr: %s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "rath.db")); err == nil {
				t.Fatal("a store was created without its KEK")
			}
		})
	}
	// The environment wins over the config file's bad entry.
	if r := rathEnv(t, append(bareEnv(t), "RATH_HOME="+home, "RATH_KEK_FILE="+kek, "RATH_DIR="+dir), "new", "hello"); r.code != 0 {
		t.Fatalf("new with RATH_KEK_FILE: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// A run of one subject with a key-encryption key set: its prompt, the
// tool's output and the model's answer are 0 times in rath.db and its
// WAL, yet rath show reads them back, replay reproduces the run and
// verify passes and says the content is sealed; the same run without a
// KEK leaves the canary in the files (the control) and verify says the
// content is not encrypted. The sealed store does not open without its
// KEK. Each command is a process of its own.
func TestRun_SealedRunLeavesNoCanaryOnDisk(t *testing.T) {
	const canary = "canary-7f3a91-for-alice"
	kek := filepath.Join(t.TempDir(), "kek")
	if r := rathEnv(t, bareEnv(t), "keys", "kek", "--out", kek); r.code != 0 {
		t.Fatalf("keys kek: %s", r.stderr)
	}
	casPath := noteCassette(t, canary+" in a file", "The note says "+canary+".")
	count := func(dir string) int {
		n := 0
		for _, f := range dbFiles(t, dir) {
			n += strings.Count(f, canary)
		}
		return n
	}
	for _, sealed := range []bool{false, true} {
		dir := t.TempDir()
		env := append(bareEnv(t), "RATH_DIR="+dir)
		if sealed {
			env = append(env, "RATH_KEK_FILE="+kek)
		}
		out := rathEnv(t, env, "run", "--subject", "alice", "--cassette", casPath, "--workspace", t.TempDir(), "--backend", "local", "--tools", "all", "--no-stream", "remember "+canary)
		if out.code != 0 {
			t.Fatalf("run (sealed %v): exit %d\n%s\n%s", sealed, out.code, out.stdout, out.stderr)
		}
		runID, sess := strings.TrimSpace(lastField(out.stdout, "run: ")), strings.TrimSpace(lastField(out.stdout, "session: "))
		show := rathEnv(t, env, "show", sess)
		if show.code != 0 || strings.Count(show.stdout, canary) < 2 {
			t.Fatalf("show %s (sealed %v): exit %d, want the prompt, the tool output and the answer\n%s\n%s", sess, sealed, show.code, show.stdout, show.stderr)
		}
		if r := rathEnv(t, env, "replay", runID); r.code != 0 || !strings.Contains(r.stdout, "reproduced") {
			t.Fatalf("replay (sealed %v): exit %d\n%s\n%s", sealed, r.code, r.stdout, r.stderr)
		}
		v := rathEnv(t, env, "verify")
		want := "content         not encrypted"
		if sealed {
			want = "content         sealed under subjects' keys"
		}
		if v.code != 0 || !strings.Contains(v.stdout, want) {
			t.Fatalf("verify (sealed %v): exit %d, want %q\n%s\n%s", sealed, v.code, want, v.stdout, v.stderr)
		}
		n := count(dir)
		switch {
		case !sealed && n == 0:
			t.Fatal("the control: the canary is not in rath.db* of the run without a KEK, so the grep proves nothing")
		case sealed && n != 0:
			t.Fatalf("the canary is %d times in rath.db* with a KEK set", n)
		}
		if sealed {
			r := rathEnv(t, append(bareEnv(t), "RATH_DIR="+dir), "verify")
			if r.code == 0 || !strings.Contains(r.stderr, "key-encryption key") {
				t.Fatalf("verify without the KEK: exit %d, want a key-encryption key error\n%s", r.code, r.stderr)
			}
		}
	}
}

// noteCassette writes a cassette whose run writes content to note.txt,
// reads it back and answers answer, and returns its path.
func noteCassette(t *testing.T, content, answer string) string {
	t.Helper()
	call := func(id, name string, args any) map[string]any {
		return map[string]any{"id": id, "name": name, "arguments": args}
	}
	cas := map[string]any{"scripted": true, "responses": []any{
		map[string]any{"tool_calls": []any{call("c1", "write_workspace_file", map[string]any{"path": "note.txt", "content": content})}},
		map[string]any{"tool_calls": []any{call("c2", "read_workspace_file", map[string]any{"path": "note.txt"})}},
		map[string]any{"content": answer},
	}}
	b, _ := json.Marshal(cas)
	path := filepath.Join(t.TempDir(), "cassette.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
