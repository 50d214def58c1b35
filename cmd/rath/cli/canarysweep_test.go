package cli

import (
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/telemetry"
	"github.com/gorath/rath/telemetry/otlptest"
)

// The canary sweep, on both stores, each command a process of its own:
// with a key-encryption key, sweepRuns runs of alice and one of bob write
// their canaries into prompts, system prompts (the runs' params), tool
// arguments and outputs (a file big enough to be kept as a blob), model
// answers and memory. Neither canary is in the database's files or WAL
// (SQLite: rath.db*; PostgreSQL: the cluster's data directory, pg_wal
// included, after a CHECKPOINT) before any erasure. After rath erase
// --subject alice, alice's canary is in none of those, nor in the memory
// index or any other file of the store's directory, nor in what rath
// serve answers, rath export prints, rath dossier writes or the OTel
// spans rath otel export sends; bob's still reads back through each.
func TestErase_CanarySweep(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			canarySweep(t, store, sweepRuns)
		})
	}
}

func canarySweep(t *testing.T, store string, runs int) {
	alice, bob := "canary-sweep-alice-"+store+"-90d4", "canary-sweep-bob-"+store+"-90d4"
	dir, kek := t.TempDir(), filepath.Join(t.TempDir(), "kek")
	env := append(bareEnv(t), "RATH_DIR="+dir, "RATH_KEK_FILE="+kek)
	var dbDir string // where the database's files are
	var pg *sql.DB
	if store == "postgres" {
		_, dsn := newDatabase(t)
		env = append(env, "RATH_DSN="+dsn)
		dbDir = pgServer.DataDir()
		var err error
		if pg, err = sql.Open("pgx", dsn); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
	}
	mustRunEnv(t, env, "keys", "kek", "--out", kek)
	if pg != nil {
		// PostgreSQL compresses a value over about 2 kB (pglz), and a
		// grep does not read through that: the columns that may hold
		// content keep theirs uncompressed here, so the sweep sees them.
		mustRunEnv(t, env, "migrate", "up")
		for _, col := range []string{"events.payload", "blobs.bytes", "runs.params", "runs.error", "approvals.question", "approvals.reason"} {
			table, column, _ := strings.Cut(col, ".")
			if _, err := pg.Exec(`ALTER TABLE ` + table + ` ALTER COLUMN ` + column + ` SET STORAGE EXTERNAL`); err != nil {
				t.Fatal(err)
			}
		}
	}

	type ran struct{ run, session string }
	runAs := func(who, canary string) ran {
		t.Helper()
		// The file is big enough to be kept as a blob.
		casPath := noteCassette(t, strings.Repeat(canary+" in a file; ", 400), "The note says "+canary+".")
		out := mustRunEnv(t, env, "run", "--subject", who, "--cassette", casPath, "--workspace", t.TempDir(), "--tools", "write_workspace_file,read_workspace_file",
			"--no-stream", "--system", "You keep notes for "+canary+".", "--memory", "notes-"+who, "remember "+canary)
		return ran{run: strings.TrimSpace(lastField(out, "run: ")), session: strings.TrimSpace(lastField(out, "session: "))}
	}
	var alices []ran
	for range runs {
		alices = append(alices, runAs("alice", alice))
	}
	bobs := runAs("bob", bob)

	// Everything the database keeps on disk.
	dbHits := func(canary string) int {
		t.Helper()
		if pg != nil {
			if _, err := pg.Exec(`CHECKPOINT`); err != nil {
				t.Fatal(err)
			}
			return treeHits(t, dbDir, canary)
		}
		n := 0
		for _, f := range dbFiles(t, dir) {
			n += strings.Count(f, canary)
		}
		return n
	}
	// The control: what is in clear (a run's id) is found there.
	if n := dbHits(alices[0].run); n == 0 {
		t.Fatalf("run id %s is not in the database's files: the sweep proves nothing", alices[0].run)
	}
	for who, c := range map[string]string{"alice": alice, "bob": bob} {
		if n := dbHits(c); n != 0 {
			t.Fatalf("before any erasure, %s's canary is %d times in the database's files", who, n)
		}
	}
	// The control: the content reads back through the CLI.
	if out := mustRunEnv(t, env, "show", alices[0].session); !strings.Contains(out, alice) {
		t.Fatalf("show %s does not read alice's canary back:\n%s", alices[0].session, out)
	}

	if out := mustRunEnv(t, env, "erase", "--subject", "alice", "--reason", "erasure request", "--as", "dpo"); !strings.Contains(out, "erased user:alice") {
		t.Fatalf("erase: %s", out)
	}

	if n := dbHits(alice); n != 0 {
		t.Errorf("after the erasure, alice's canary is %d times in the database's files", n)
	}
	// The store's directory: the memory index and any other derived file.
	if n := treeHits(t, dir, alice); n != 0 {
		t.Errorf("after the erasure, alice's canary is %d times in the store's directory (the memory index)", n)
	}
	if out := mustRunEnv(t, env, "memory", "recall", "notes-bob", bob); !strings.Contains(out, bob) {
		t.Errorf("memory recall does not find bob's memory:\n%s", out)
	}
	if out := mustRunEnv(t, env, "memory", "recall", "notes-alice", alice); strings.Contains(out, alice) {
		t.Errorf("memory recall still finds alice's memory:\n%s", out)
	}

	// What the CLI prints.
	for _, x := range []struct {
		r      ran
		canary string
		keeps  bool
	}{{alices[0], alice, false}, {alices[len(alices)-1], alice, false}, {bobs, bob, true}} {
		for _, argv := range [][]string{{"export", x.r.session}, {"show", x.r.session}, {"dossier", x.r.run}} {
			r := rathEnv(t, env, argv...)
			got := strings.Contains(r.stdout+r.stderr, x.canary)
			if r.code != 0 && x.keeps {
				t.Errorf("rath %s: exit %d\n%s", strings.Join(argv, " "), r.code, r.stderr)
			}
			if got != x.keeps {
				t.Errorf("rath %s: the canary read back %v, want %v\n%.2000s", strings.Join(argv, " "), got, x.keeps, r.stdout)
			}
		}
	}

	// The console's API, over real HTTP from rath serve.
	base, _, _ := serveWith(t, env, nil)
	get := func(path string) string {
		t.Helper()
		return getOK(t, base+strings.TrimPrefix(path, "/"))
	}
	// An erased run has left the read models: its routes may answer 404,
	// but never a server error, and never with its content.
	getGone := func(path string) string {
		t.Helper()
		res, err := http.Get(base + strings.TrimPrefix(path, "/"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %s %s", path, res.Status, b)
		}
		return string(b)
	}
	answers := func(r ran, get func(string) string) string {
		var all strings.Builder
		for _, p := range []string{"/api/runs/" + r.run, "/api/runs/" + r.run + "/events", "/api/runs/" + r.run + "/dossier",
			"/api/runs/" + r.run + "/tools", "/api/sessions/" + r.session} {
			all.WriteString(get(p))
		}
		return all.String()
	}
	if got := answers(bobs, get); !strings.Contains(got, bob) {
		t.Errorf("the console's answers for bob's run do not hold bob's canary")
	}
	var alicesAnswers strings.Builder
	for _, r := range []ran{alices[0], alices[len(alices)-1]} {
		alicesAnswers.WriteString(answers(r, getGone))
	}
	for _, p := range []string{"/api/runs", "/api/approvals", "/api/memory/namespaces",
		"/api/memory/search?ns=notes-alice&q=" + url.QueryEscape(alice), "/api/memory/list?ns=notes-alice"} {
		alicesAnswers.WriteString(get(p))
	}
	if strings.Contains(alicesAnswers.String(), alice) {
		t.Errorf("the console answers with alice's canary after the erasure")
	}
	if !strings.Contains(get("/api/memory/search?ns=notes-bob&q="+url.QueryEscape(bob)), bob) {
		t.Errorf("the console's memory search does not find bob's memory")
	}

	// OTel spans exported afterwards, with message content captured.
	rec, endpoint := otlptest.StartHTTP(t)
	otel := append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+telemetry.ProtocolHTTP,
		"OTEL_SERVICE_NAME=rath-test", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
	for _, x := range []struct {
		r      ran
		canary string
		keeps  bool
	}{{alices[0], alice, false}, {bobs, bob, true}} {
		rec.Reset()
		r := rathEnv(t, otel, "otel", "export", x.r.run)
		if r.code != 0 && !x.keeps && strings.Contains(r.stderr, "erased") && !strings.Contains(r.stdout+r.stderr, x.canary) {
			continue // an erased run's trace cannot be rebuilt: a clear error
		}
		if r.code != 0 {
			t.Fatalf("otel export %s: exit %d\n%s", x.r.run, r.code, r.stderr)
		}
		spans := rec.Spans()
		if len(spans) == 0 {
			t.Fatalf("otel export %s sent no span", x.r.run)
		}
		if got := strings.Contains(fmt.Sprint(spans), x.canary); got != x.keeps {
			t.Errorf("the spans of run %s hold the canary: %v, want %v", x.r.run, got, x.keeps)
		}
	}
}

// treeHits counts needle in every file under root.
func treeHits(t *testing.T, root, needle string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil // a file the server removed meanwhile
		}
		b, err := os.ReadFile(path)
		if err == nil {
			n += strings.Count(string(b), needle)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// getOK GETs url and returns the body, failing t unless the answer is
// 200 OK.
func getOK(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, res.Status, b)
	}
	return string(b)
}
