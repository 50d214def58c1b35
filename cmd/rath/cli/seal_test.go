package cli

import (
	"bytes"
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
