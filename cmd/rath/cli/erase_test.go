package cli

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath/keyring"
)

// `rath erase`, each command a process of its own, on both stores: it
// destroys the subject's key and prints what it erased; verify lists the
// erasure and still passes; erasing again, a subject never given a key,
// an invalid subject, or any subject without the store's key-encryption
// key is an error (non-zero exit) that leaves the log as it was; and the
// destroyed key put back from a copy fails verify (exit 3).
func TestErase_DestroysTheKeyAndVerifyListsIt(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			kekPath := filepath.Join(t.TempDir(), "kek")
			plain := append(bareEnv(t), "RATH_DIR="+dir)
			var db *sql.DB
			if store == "postgres" {
				_, dsn := newDatabase(t)
				plain = append(plain, "RATH_DSN="+dsn)
				var err error
				if db, err = sql.Open("pgx", dsn); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
			}
			env := append(plain, "RATH_KEK_FILE="+kekPath)
			mustRunEnv(t, env, "keys", "kek", "--out", kekPath)
			mustRunEnv(t, env, "new", "a store with a key-encryption key")
			if db == nil {
				db = openDB(t, dir)
			}
			// The subjects' keys, as a writer sealing their content makes them.
			kek, err := keyring.LoadKEKFile(kekPath)
			if err != nil {
				t.Fatal(err)
			}
			var rebind func(string) string
			if store == "postgres" {
				rebind = func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }
			}
			kr := keyring.New(kek, rebind)
			alice, err := kr.Create(t.Context(), db, "user:alice")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kr.Create(t.Context(), db, "user:bob"); err != nil {
				t.Fatal(err)
			}

			if r := rathEnv(t, plain, "erase", "--subject", "alice", "--reason", "r"); r.code == 0 || !strings.Contains(r.stderr, "key-encryption key") {
				t.Fatalf("erase without the KEK: exit %d\n%s", r.code, r.stderr)
			}
			r := rathEnv(t, env, "erase", "--subject", "alice", "--reason", "erasure request 42", "--as", "dpo")
			if r.code != 0 || !strings.Contains(r.stdout, "erased user:alice") || !strings.Contains(r.stdout, "by dpo: erasure request 42") {
				t.Fatalf("erase: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			v := rathEnv(t, env, "verify")
			if v.code != 0 || !strings.Contains(v.stdout, "erased          user:alice: erased at seq") {
				t.Fatalf("verify after the erasure: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
			head := decodeJSON[verifyView](t, mustRunEnv(t, env, "verify", "--json")).Head
			for _, tc := range []struct{ subject, want string }{
				{"alice", "already erased"}, {"carol", "has no key"}, {"user:with space", "only printable ASCII"}, {"bad\x1b[2J", "only printable ASCII"},
			} {
				r := rathEnv(t, env, "erase", "--subject", tc.subject, "--reason", "again")
				if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "\x1b") {
					t.Errorf("erase %q: exit %d, want an error saying %q\n%q", tc.subject, r.code, tc.want, r.stderr)
				}
			}
			if got := decodeJSON[verifyView](t, mustRunEnv(t, env, "verify", "--json")).Head; got != head {
				t.Errorf("a refused erase changed the log: head %s, was %s", got, head)
			}
			var remaining int
			if err := db.QueryRow(`SELECT count(*) FROM subject_keys WHERE subject = 'user:bob'`).Scan(&remaining); err != nil || remaining != 1 {
				t.Fatalf("bob's key: %d rows, %v", remaining, err)
			}
			// The destroyed key restored from a copy: verify fails.
			if _, err := db.Exec(`INSERT INTO subject_keys (subject, key_id, wrapped, kek_id, created_at) SELECT 'user:alice', '` + alice.ID + `', wrapped, kek_id, created_at FROM subject_keys WHERE subject = 'user:bob'`); err != nil {
				t.Fatal(err)
			}
			if v := rathEnv(t, env, "verify"); v.code != ExitVerifyFailed || !strings.Contains(v.stderr+v.stdout, "in the store again") {
				t.Fatalf("verify with the destroyed key back: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}
