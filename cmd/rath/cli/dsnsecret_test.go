package cli

import (
	"bytes"
	"net/url"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A local tool reads rath's environment (env gets an allow-list, so it
// reads /proc/$PPID/environ) and its command line (/proc/$PPID/cmdline): the PostgreSQL password inside RATH_DSN and
// --dsn is in both. It must reach neither the database (a pg_dump of all
// of it) nor any export. The test server trusts loopback, so the password
// is not checked; it is in the DSN as a user's would be.
func TestPostgres_DSNPasswordNeverReachesTheLog(t *testing.T) {
	t.Parallel()
	const password = "pg-5ecret/pw@x9" // '/' and '@' are escaped in the URL
	_, plain := newDatabase(t)
	u, err := url.Parse(plain)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("postgres", password)
	dsn := u.String()
	escaped := strings.SplitN(u.User.String(), ":", 2)[1]
	if escaped == password || !strings.Contains(dsn, escaped) {
		t.Fatalf("the test wants an escaped password in %s", dsn)
	}
	dir, work := t.TempDir(), t.TempDir()
	cas := writeCassette(t, "done", `c1:run_shell_command:{"cmd":"env; tr '\\0' '\\n' < /proc/$PPID/environ"}`, `c2:run_shell_command:{"cmd":"tr '\\0' ' ' < /proc/$PPID/cmdline"}`)
	home := []string{"RATH_DIR=" + dir, "RATH_HOME=" + t.TempDir()}
	run := []string{"run", "--cassette", cas, "--workspace", work, "--backend", "local", "--tools", "run_shell_command", "--no-stream", "look around"}
	// Through the environment, then through the flag alone.
	out := rathProc(t, append(home, "RATH_DSN="+dsn), run...)
	out += rathProc(t, append(home, "RATH_DSN="), append([]string{"--dsn", dsn}, run...)...)
	evs := rathProc(t, append(home, "RATH_DSN="+dsn), "events", "--json")
	// The tools did print the DSN, redacted.
	for _, want := range []string{"RATH_DSN=postgres://[redacted:", "--dsn postgres://[redacted:"} {
		if !strings.Contains(evs, want) {
			t.Errorf("the events lack %q: the tools did not see the DSN", want)
		}
	}
	exports := map[string]string{"run output": out, "events": evs}
	for _, id := range runIDs(out) {
		exports["dossier "+id] = rathProc(t, append(home, "RATH_DSN="+dsn), "dossier", id)
	}
	rathProc(t, append(home, "RATH_DSN="+dsn), "verify")
	dumps, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	if len(dumps) == 0 {
		t.Fatal("no pg_dump")
	}
	var dump, errb bytes.Buffer
	cmd := execpkg.Command(dumps[len(dumps)-1], "--dbname", plain)
	cmd.Stdout, cmd.Stderr = &dump, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, errb.String())
	}
	if !strings.Contains(dump.String(), "run_shell_command") {
		t.Fatal("the dump does not hold the run")
	}
	exports["pg_dump"] = dump.String()
	for name, text := range exports {
		for _, v := range []string{password, escaped, "pg-5ecret"} {
			if strings.Contains(text, v) {
				t.Errorf("%s holds the password (as %q)", name, v)
			}
		}
	}
}

// runIDs are the ids of the "run: ID" lines of rath run's output.
func runIDs(out string) []string {
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(line, "run: "); ok {
			ids = append(ids, strings.TrimSpace(id))
		}
	}
	return ids
}
