package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
)

// canaryCassette is a run whose tool output and answer both carry canary.
func canaryCassette(t *testing.T, canary string) string {
	t.Helper()
	cas := filepath.Join(t.TempDir(), "cassette.json")
	body := `{"scripted": true, "description": "a canary in a tool output and an answer",
 "responses": [
  {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo ` + canary + `-tool; echo ` + canary + `-tool-again"}}]},
  {"content": "The answer is ` + canary + `-answer."}
 ]}`
	if err := os.WriteFile(cas, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cas
}

// mustRunEnv runs the stock rath binary with env and fails the test
// unless it exits 0.
func mustRunEnv(t *testing.T, env []string, argv ...string) string {
	t.Helper()
	r := rathEnv(t, env, argv...)
	if r.code != 0 {
		t.Fatalf("rath %s: exit %d\n%s", strings.Join(argv, " "), r.code, r.stderr)
	}
	return r.stdout
}

// occurrences counts canary in the store's files (the database and its
// WAL), as anyone who can read them would find it.
func occurrences(t *testing.T, dir, canary string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, name := range []string{rath.DBFile, rath.DBFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n[name] = bytes.Count(b, []byte(canary))
	}
	return n
}

// After `rath redact --run`, the redacted text is in no storage file of
// a SQLite store: not in stale b-tree cells or freed pages of rath.db,
// and not in its WAL once checkpointed, though another process keeps the
// store open (so the WAL outlives the processes that wrote it).
func TestRedact_LeavesNoCopyInTheSQLiteFiles(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-5d1e0b7a"
	dir, work := t.TempDir(), t.TempDir()
	env := append(bareEnv(t), "RATH_DIR="+dir)
	mustRunEnv(t, env, "new", "a store opened by another process")
	// Another process keeps the store open from before the run, so the
	// run's pages stay in the WAL after it exits.
	reader := openDB(t, dir)
	var n int
	if err := reader.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if r := rathEnv(t, env, "run", "--cassette", canaryCassette(t, canary), "--workspace", work, "--tools", "run_shell_command", "say", "it"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	total := 0
	for _, n := range occurrences(t, dir, canary) {
		total += n
	}
	if total == 0 {
		t.Fatal("the canary is not in the store before the redaction: the test proves nothing")
	}
	run := decodeJSON[[]runView](t, rathEnv(t, env, "runs", "--json").stdout)[0].ID
	r := rathEnv(t, env, "redact", "--run", run, "--reason", "erasure request")
	if r.code != 0 || !strings.Contains(r.stdout, "redacted ") {
		t.Fatalf("redact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "PostgreSQL") {
		t.Fatalf("redact on SQLite printed the PostgreSQL notice:\n%s", r.stderr)
	}
	if _, err := reader.Exec(`PRAGMA wal_checkpoint(FULL)`); err != nil {
		t.Fatal(err)
	}
	for name, n := range occurrences(t, dir, canary) {
		if n != 0 {
			t.Errorf("%s holds the redacted text %d times", name, n)
		}
	}
}

// On PostgreSQL rath cannot remove the bytes a redaction deletes from
// the server's WAL, backups or replicas: rath redact and rath retain say
// so, and what the operator must do, on stderr (stdout stays data).
func TestRedact_PostgresSaysWhatStaysBehind(t *testing.T) {
	t.Parallel()
	_, dsn := newDatabase(t)
	dir, work := t.TempDir(), t.TempDir()
	env := append(bareEnv(t), "RATH_DIR="+dir, "RATH_DSN="+dsn)
	for range 2 {
		if r := rathEnv(t, env, "run", "--cassette", canaryCassette(t, "CANARY-pg"), "--workspace", work, "--tools", "run_shell_command", "say", "it"); r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
	}
	runs := decodeJSON[[]runView](t, rathEnv(t, env, "runs", "--json").stdout)
	wants := []string{"does not remove the deleted bytes", "WAL", "base backups", "replicas", "VACUUM"}
	check := func(what string, r result) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", what, r.code, r.stderr)
		}
		for _, w := range wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s on PostgreSQL does not say %q:\n%s", what, w, r.stderr)
			}
			if strings.Contains(r.stdout, w) {
				t.Errorf("%s printed the notice on stdout:\n%s", what, r.stdout)
			}
		}
	}
	check("rath redact", rathEnv(t, env, "redact", "--run", runs[0].ID, "--reason", "erasure request", "--json"))
	check("rath retain", rathEnv(t, env, "retain", "--completed-before", "0d"))
}
