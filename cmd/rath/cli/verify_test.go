package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"golang.org/x/mod/sumdb/tlog"
)

var headLine = regexp.MustCompile(`(?m)^head\s+(\d+:[0-9a-f]{64})$`)

func TestRun_Verify(t *testing.T) {
	w := seed(t)
	out := mustRun(t, w.dir, "verify")
	m := headLine.FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], fmt.Sprintf("%d:", w.events)) {
		t.Fatalf("verify output lacks head %d:HASH:\n%s", w.events, out)
	}
	head := m[1]
	if !strings.Contains(out, fmt.Sprintf("events checked  %d", w.events)) || !strings.Contains(out, "blobs checked   1") || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("verify output:\n%s", out)
	}
	type view struct {
		OK        bool   `json:"ok"`
		Events    int64  `json:"events"`
		Head      string `json:"head"`
		FailedSeq int64  `json:"failed_seq"`
		Failure   string `json:"failure"`
	}
	if v := decodeJSON[view](t, mustRun(t, w.dir, "verify", "--json")); !v.OK || v.Events != w.events || v.Head != head {
		t.Fatalf("verify --json = %+v", v)
	}
	mustRun(t, w.dir, "verify", "--head", head)

	wrongHash := strings.SplitN(head, ":", 2)[0] + ":" + strings.Repeat("0", 64)
	if r := rathCLI(t, w.dir, "verify", "--head", wrongHash); r.code != ExitVerifyFailed || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", w.events)) {
		t.Fatalf("wrong head hash: exit %d stderr %q", r.code, r.stderr)
	}

	// Tamper with one payload behind rath's back.
	db := openDB(t, w.dir)
	exec(t, db, `DROP TRIGGER events_no_update`,
		`UPDATE events SET payload = replace(payload, 'List the files', 'Delete the files') WHERE seq = 2`)
	db.Close()
	r := rathCLI(t, w.dir, "verify")
	if r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "seq 2") || !strings.Contains(r.stderr, "hash mismatch") {
		t.Fatalf("tampered log: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "ok\n") {
		t.Fatalf("tampered log printed ok:\n%s", r.stdout)
	}
	r = rathCLI(t, w.dir, "verify", "--json")
	if v := decodeJSON[view](t, r.stdout); r.code != ExitVerifyFailed || v.OK || v.FailedSeq != 2 || v.Failure == "" {
		t.Fatalf("tampered --json: exit %d %+v", r.code, v)
	}
}

func TestRun_VerifyDetectsTruncation(t *testing.T) {
	w := seed(t)
	m := headLine.FindStringSubmatch(mustRun(t, w.dir, "verify"))
	if m == nil {
		t.Fatal("no head")
	}
	tree := treeLine.FindStringSubmatch(mustRun(t, w.dir, "verify"))
	if tree == nil {
		t.Fatal("no tree head")
	}
	rt, err := rath.Open(t.Context(), w.dir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := rt.Store().TreeHeadAt(t.Context(), w.events-1)
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, w.dir)
	exec(t, db, `DROP TRIGGER events_no_delete`, fmt.Sprintf(`DELETE FROM events WHERE seq = %d`, w.events))
	// The Merkle tree still holds the deleted event's leaf...
	if r := rathCLI(t, w.dir, "verify"); r.code != ExitVerifyFailed || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", w.events)) || !strings.Contains(r.stderr, "tail") {
		t.Fatalf("deleted tail event: exit %d stderr %q", r.code, r.stderr)
	}
	// ...until the attacker truncates the tree and rewrites its head too.
	exec(t, db, `DROP TRIGGER tree_hashes_no_delete`, fmt.Sprintf(`DELETE FROM tree_hashes WHERE id >= %d`, tlog.StoredHashCount(w.events-1)),
		fmt.Sprintf(`UPDATE store_meta SET value = '%s' WHERE key = 'merkle_head'`, before))
	db.Close()
	// The projections still hold the deleted event's session...
	if r := rathCLI(t, w.dir, "verify"); r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "table sessions") || !strings.Contains(r.stderr, w.detached) {
		t.Fatalf("truncated log with stale projections: exit %d stderr %q", r.code, r.stderr)
	}
	// ...until the attacker rebuilds them: the shortened chain is
	// internally consistent...
	mustRun(t, w.dir, "rebuild")
	mustRun(t, w.dir, "verify")
	// ...but not against the head kept from before.
	r := rathCLI(t, w.dir, "verify", "--head", m[1])
	if r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "truncated") || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", w.events)) {
		t.Fatalf("truncation: exit %d stderr %q", r.code, r.stderr)
	}
	r = rathCLI(t, w.dir, "verify", "--tree", tree[1])
	if r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "truncated") || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", w.events)) {
		t.Fatalf("truncation, tree head: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestRun_Rebuild(t *testing.T) {
	w := seed(t)
	r := rathCLI(t, w.dir, "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("events replayed  %d", w.events)) {
		t.Fatalf("rebuild: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Its progress bar is for terminals only (TestRebuild_NoProgressBarWhenNotATerminal).
	r = rathCLI(t, w.dir, "rebuild", "--check")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("events replayed  %d", w.events)) || !strings.Contains(r.stdout, "projections equal") {
		t.Fatalf("rebuild --check: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	type view struct {
		Events      int64    `json:"events"`
		Checked     bool     `json:"checked"`
		Differences []string `json:"differences"`
	}
	if v := decodeJSON[view](t, mustRun(t, w.dir, "rebuild", "--json")); v.Events != w.events || v.Checked {
		t.Fatalf("rebuild --json = %+v", v)
	}
	// A projection row edited by hand is what --check exists to catch.
	db := openDB(t, w.dir)
	exec(t, db, fmt.Sprintf(`UPDATE sessions SET children = 99 WHERE id = '%s'`, w.root))
	sum := func() string {
		var n, c int64
		if err := db.QueryRow(`SELECT count(*), sum(children) FROM sessions`).Scan(&n, &c); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(n, c)
	}
	tampered := sum()
	r = rathCLI(t, w.dir, "rebuild", "--check", "--json")
	v := decodeJSON[view](t, r.stdout)
	if r.code != ExitVerifyFailed || len(v.Differences) != 1 || !strings.Contains(v.Differences[0], "table sessions, row id="+w.root) ||
		!strings.Contains(v.Differences[0], "children: stored 99, rebuilt 2") {
		t.Fatalf("rebuild --check after tampering: exit %d %+v\n%s", r.code, v, r.stderr)
	}
	// --check is read-only: the row is still wrong, and so is a second check.
	if got := sum(); got != tampered {
		t.Fatalf("rebuild --check changed the store: %s, was %s", got, tampered)
	}
	if r := rathCLI(t, w.dir, "rebuild", "--check"); r.code != ExitVerifyFailed || !strings.Contains(r.stdout, "children: stored 99") {
		t.Fatalf("second check: exit %d\n%s", r.code, r.stdout)
	}
	// A rebuild repairs it.
	mustRun(t, w.dir, "rebuild")
	mustRun(t, w.dir, "rebuild", "--check")
	if r := rathCLI(t, w.dir, "rebuild", "--check", "--memory"); r.code != ExitUsage {
		t.Fatalf("--check --memory: exit %d, want a usage error", r.code)
	}
}

func TestRun_VerifyWithHMACKey(t *testing.T) {
	dir := t.TempDir()
	rt, err := rath.OpenWith(t.Context(), rath.Options{Dir: dir, HMACKey: []byte("k1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.NewUserSession(t.Context(), "keyed"); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	// Without the key the first event cannot verify.
	if r := rathCLI(t, dir, "verify"); r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "seq 1") || !strings.Contains(r.stderr, "HMAC key") {
		t.Fatalf("verify without key: exit %d %q", r.code, r.stderr)
	}
	t.Setenv("RATH_HMAC_KEY", "k1")
	id := strings.TrimSpace(mustRun(t, dir, "new", "second"))
	mustRun(t, dir, "append", id, "more")
	if out := mustRun(t, dir, "verify"); !strings.Contains(out, "events checked  3") {
		t.Fatalf("verify with key:\n%s", out)
	}
}

// TestRun_VerifyCoversProjections edits each projection table behind
// rath's back, as someone with the database file can (no trigger guards
// them): verify must fail naming the table, and a dossier must not claim
// that what it shows was verified.
func TestRun_VerifyCoversProjections(t *testing.T) {
	// Distinct names: a "#01" suffix would end up in the database path,
	// where SQLite's URI reads "#" as the start of a fragment.
	tests := []struct {
		name, table string
		stmt        string
	}{
		{"edge kind", "session_edges", `UPDATE session_edges SET kind = 'compress' WHERE kind = 'fork'`},
		{"usage tokens", "usage", `UPDATE usage SET total_tokens = 1`},
		{"invented call", "usage", `INSERT INTO usage (seq, session, model, total_tokens) VALUES (999, 'x', 'm', 5)`},
		{"run status", "runs", `UPDATE runs SET status = 'ok', output_session = 'forged'`},
		{"session usage", "sessions", `UPDATE sessions SET total_tokens = 1 WHERE total_tokens > 0`},
		{"session length", "sessions", `UPDATE sessions SET length = length - 1 WHERE kind = 'root'`},
		{"id counter", "id_counters", `UPDATE id_counters SET n = n + 7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := seed(t)
			mustRun(t, w.dir, "verify")
			db := openDB(t, w.dir)
			exec(t, db, tt.stmt)
			db.Close()

			r := rathCLI(t, w.dir, "verify")
			if r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "table "+tt.table+",") || strings.HasSuffix(r.stdout, "ok\n") {
				t.Fatalf("verify after editing %s: exit %d\nstdout %s\nstderr %s", tt.table, r.code, r.stdout, r.stderr)
			}
			type view struct {
				OK          bool   `json:"ok"`
				FailedTable string `json:"failed_table"`
				Failure     string `json:"failure"`
			}
			r = rathCLI(t, w.dir, "verify", "--json")
			if v := decodeJSON[view](t, r.stdout); r.code != ExitVerifyFailed || v.OK || v.FailedTable != tt.table || v.Failure == "" {
				t.Fatalf("verify --json after editing %s: exit %d %+v", tt.table, r.code, v)
			}

			md := rathCLI(t, w.dir, "dossier", "run-1", "--format", "md")
			if md.code != 0 {
				// Some edits leave a transcript that cannot be read at all.
				if md.code != ExitFailure || !strings.Contains(md.stderr, "verification had failed") || !strings.Contains(md.stderr, "table "+tt.table) {
					t.Fatalf("dossier: exit %d\n%s\n%s", md.code, md.stderr, md.stdout)
				}
			} else if strings.Contains(md.stdout, "**Verified:**") || !strings.Contains(md.stdout, "**Verification FAILED:**") || !strings.Contains(md.stdout, "table "+strings.ReplaceAll(tt.table, "_", `\_`)) {
				t.Fatalf("dossier after editing %s claims or omits the verification:\n%s", tt.table, md.stdout)
			}
			if html := rathCLI(t, w.dir, "dossier", "run-1"); html.code == 0 &&
				(!strings.Contains(html.stdout, "verification failed") || strings.Contains(html.stdout, `class="big ok">verified`)) {
				t.Fatalf("HTML dossier after editing %s does not say the verification failed", tt.table)
			}

			// A rebuild restores the projections from the log.
			mustRun(t, w.dir, "rebuild")
			if out := mustRun(t, w.dir, "verify"); !strings.Contains(out, "projections     equal a rebuild") {
				t.Fatalf("verify after rebuild:\n%s", out)
			}
			md = rathCLI(t, w.dir, "dossier", "run-1", "--format", "md")
			if !strings.Contains(md.stdout, "**Verified:** hash chain of") || !strings.Contains(md.stdout, "usage and runs shown equal a rebuild from the log") {
				t.Fatalf("dossier after rebuild does not say what was verified:\n%s", md.stdout)
			}
		})
	}
}

// A keyed store refuses "rath append" without its key or with another
// one: exit 1, an error naming RATH_HMAC_KEY and not the key, nothing
// written, and the chain still verifies with the right key.
func TestRun_AppendRefusesAMismatchedKey(t *testing.T) {
	const key = "k1-secret-value"
	dir := t.TempDir()
	t.Setenv("RATH_HMAC_KEY", key)
	id := strings.TrimSpace(mustRun(t, dir, "new", "keyed"))
	for _, wrong := range []string{"", "k2-other-value"} {
		t.Setenv("RATH_HMAC_KEY", wrong)
		r := rathCLI(t, dir, "append", id, "forged")
		if r.code != ExitFailure || !strings.Contains(r.stderr, "RATH_HMAC_KEY") || !strings.Contains(r.stderr, "refusing to write") {
			t.Fatalf("append with key %q: exit %d %q", wrong, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, key) || (wrong != "" && strings.Contains(r.stderr, wrong)) {
			t.Fatalf("the error shows a key: %q", r.stderr)
		}
	}
	t.Setenv("RATH_HMAC_KEY", key)
	if out := mustRun(t, dir, "verify"); !strings.Contains(out, "events checked  1") || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("verify with the key after refused appends:\n%s", out)
	}
	mustRun(t, dir, "append", id, "more")
	if out := mustRun(t, dir, "verify"); !strings.Contains(out, "events checked  2") {
		t.Fatalf("verify after an append with the key:\n%s", out)
	}
}

// Deleting the prompt texts of a recorded run (the message segments its
// requests reach through messages_ref, which no event names directly)
// makes verify fail, naming a deleted blob.
func TestRun_VerifyCatchesDeletedPromptSegments(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "demo")
	mustRun(t, dir, "verify")
	db := openDB(t, dir)
	rows, err := db.Query(`SELECT hash FROM blobs WHERE CAST(bytes AS TEXT) LIKE '{"add":%' OR CAST(bytes AS TEXT) LIKE '{"prev":%'`)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, h)
	}
	rows.Close()
	if len(segs) == 0 {
		t.Fatal("the demo stored no message segments")
	}
	exec(t, db, `DELETE FROM blobs WHERE CAST(bytes AS TEXT) LIKE '{"add":%' OR CAST(bytes AS TEXT) LIKE '{"prev":%'`)
	db.Close()
	r := rathCLI(t, dir, "verify")
	if r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "message segment") {
		t.Fatalf("verify after deleting %d segments: exit %d\n%s%s", len(segs), r.code, r.stdout, r.stderr)
	}
	named := false
	for _, h := range segs {
		named = named || strings.Contains(r.stderr, h)
	}
	if !named {
		t.Fatalf("verify does not name a deleted segment: %s", r.stderr)
	}
}
