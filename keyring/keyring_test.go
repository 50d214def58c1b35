package keyring_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/migrations"
	_ "modernc.org/sqlite"
)

// mustSQLite returns a migrated SQLite database in a temporary directory.
func mustSQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "rath.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := migrations.Up(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestGenerateKEKFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kek")
	if err := keyring.GenerateKEKFile(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("mode %v, want %v", got, want)
	}
	before, _ := os.ReadFile(path)
	err = keyring.GenerateKEKFile(path)
	if !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("second generate: %v, want ErrKEK", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the second generate changed the file")
	}
	a, err := keyring.LoadKEKFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := keyring.LoadKEKFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() != b.ID() || len(a.ID()) != 16 {
		t.Errorf("ids %q and %q: want one stable 16-digit id", a.ID(), b.ID())
	}
	if strings.Contains(string(before), a.ID()) {
		t.Error("the id is part of the key file")
	}
}

func TestLoadKEKFile_Errors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct{ name, path string }{
		{"missing", filepath.Join(dir, "none")},
		{"empty", write("empty", "")},
		{"another format", write("pem", "-----BEGIN PRIVATE KEY-----\n")},
		{"not base64", write("b64", "rath-kek-v1 !!!\n")},
		{"short key", write("short", "rath-kek-v1 AAAA\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keyring.LoadKEKFile(tc.path)
			var ke *keyring.KEKError
			if !errors.Is(err, keyring.ErrKEK) || !errors.As(err, &ke) || ke.Path != tc.path {
				t.Fatalf("err %v, want a *KEKError for %s", err, tc.path)
			}
		})
	}
}

func TestKEK_UnwrapWithAnotherKEK(t *testing.T) {
	a, b := keyringtest.KEK(t), keyringtest.KEK(t)
	w, err := a.Wrap(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Unwrap(w); err != nil || !bytes.Equal(got, bytes.Repeat([]byte{7}, 32)) {
		t.Fatalf("unwrap: %x, %v", got, err)
	}
	if _, err := b.Unwrap(w); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("unwrap with another KEK: %v, want ErrKEK", err)
	}
}

func TestValidSubject(t *testing.T) {
	cases := []struct {
		subject string
		ok      bool
	}{
		{"user:alice", true},
		{"run:01J0ABC", true},
		{"session:s-1", true},
		{"memory:team/notes", true},
		{`user:a"b\c`, true},
		{"user:" + strings.Repeat("x", 200), true},
		{"user:" + strings.Repeat("x", 201), false},
		{"user:", false},
		{"alice", false},
		{"tenant:alice", false},
		{"user:al ice", false},
		{"user:al\x1bice", false},
		{"user:alicé", false},
	}
	for _, tc := range cases {
		err := keyring.ValidSubject(tc.subject)
		if got := err == nil; got != tc.ok {
			t.Errorf("ValidSubject(%q) = %v, want ok %v", tc.subject, err, tc.ok)
		}
		if err != nil && !errors.Is(err, keyring.ErrSubject) {
			t.Errorf("ValidSubject(%q) = %v, want ErrSubject", tc.subject, err)
		}
		if err != nil && strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("the error carries an escape byte: %q", err)
		}
	}
}

func TestSealedForm(t *testing.T) {
	for _, p := range []string{`{"text":"hello"}`, `{"$sealed":2}`, ``, `[]`} {
		if keyring.IsSealed([]byte(p)) {
			t.Errorf("IsSealed(%s) = true", p)
		}
		if _, ok := keyring.SealedSubject([]byte(p)); ok {
			t.Errorf("SealedSubject(%s) found one", p)
		}
	}
}

// keyringTests runs the keyring against one database; rebind turns ?
// into its placeholders.
func keyringTests(t *testing.T, db *sql.DB, rebind func(string) string) {
	ctx := t.Context()
	kek := keyringtest.KEK(t)
	kr := keyring.New(kek, rebind)
	create := func(subject string) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kr.Create(ctx, tx, subject); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	const canary = "canary-7d1f: alice's diagnosis"
	binding := []byte("stream-1\x00tool.returned")

	if err := keyring.CheckKEK(ctx, db, rebind, nil); err != nil {
		t.Fatalf("an empty store needs no KEK: %v", err)
	}
	if _, err := kr.Key(ctx, db, "user:alice"); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("a subject with no key: %v, want ErrErased", err)
	}

	// A rolled-back creation leaves no key.
	tx, _ := db.BeginTx(ctx, nil)
	if _, err := kr.Create(ctx, tx, "user:alice"); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if _, err := kr.Key(ctx, db, "user:alice"); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("after a rolled-back create: %v, want ErrErased", err)
	}

	create("user:alice")
	create("user:alice") // a second create keeps the first key
	create("user:bob")
	dk, err := kr.Key(ctx, db, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := keyring.Seal(dk, binding, []byte(canary))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("canary")) || !keyring.IsSealed(sealed) {
		t.Fatalf("sealed form %s", sealed)
	}
	if s, ok := keyring.SealedSubject(sealed); !ok || s != "user:alice" {
		t.Fatalf("SealedSubject = %q, %v", s, ok)
	}
	got, err := kr.Open(ctx, db, sealed, binding)
	if err != nil || string(got) != canary {
		t.Fatalf("open: %q, %v", got, err)
	}
	// Another process's keyring (a cold cache) opens it too.
	if got, err := keyring.New(kek, rebind).Open(ctx, db, sealed, binding); err != nil || string(got) != canary {
		t.Fatalf("open with a cold cache: %q, %v", got, err)
	}
	if _, err := kr.Open(ctx, db, sealed, []byte("stream-2\x00tool.returned")); !errors.Is(err, keyring.ErrSealed) {
		t.Fatalf("open under another binding: %v, want ErrSealed", err)
	}
	swapped := bytes.Replace(sealed, []byte(`"s":"user:alice"`), []byte(`"s":"user:bob"`), 1)
	if _, err := kr.Open(ctx, db, swapped, binding); err == nil {
		t.Fatal("a payload relabelled with another subject opened")
	}

	// The store now needs this KEK.
	if err := keyring.CheckKEK(ctx, db, rebind, kek); err != nil {
		t.Fatalf("check with the store's KEK: %v", err)
	}
	if err := keyring.CheckKEK(ctx, db, rebind, nil); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("check with no KEK: %v, want ErrKEK", err)
	}
	other := keyringtest.KEK(t)
	if err := keyring.CheckKEK(ctx, db, rebind, other); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("check with another KEK: %v, want ErrKEK", err)
	}
	if _, err := keyring.New(other, rebind).Open(ctx, db, sealed, binding); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("open with another KEK: %v, want ErrKEK", err)
	}

	// Erasure: a cold keyring (another process) still caches the old key;
	// after Erase the subject's content no longer opens, even once a new
	// key is made for the subject.
	cold := keyring.New(kek, rebind)
	if _, err := cold.Open(ctx, db, sealed, binding); err != nil {
		t.Fatal(err)
	}
	etx, _ := db.BeginTx(ctx, nil)
	id, err := kr.Erase(ctx, etx, "user:alice")
	if err != nil || id != dk.ID {
		t.Fatalf("erase: %q, %v; want key id %q", id, err, dk.ID)
	}
	if err := etx.Commit(); err != nil {
		t.Fatal(err)
	}
	var ee *keyring.ErasedError
	if _, err := kr.Open(ctx, db, sealed, binding); !errors.As(err, &ee) || ee.Subject != "user:alice" {
		t.Fatalf("open after erase: %v, want *ErasedError for user:alice", err)
	}
	if _, err := kr.Erase(ctx, db, "user:alice"); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("a second erase: %v, want ErrErased", err)
	}
	// The other process's keyring drops the key it cached once Freshness
	// passed, with no Forget: it reads the generation the erasure wrote.
	time.Sleep(keyring.Freshness)
	if _, err := cold.Open(ctx, db, sealed, binding); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("another process's cached key after the erasure: %v, want ErrErased", err)
	}
	create("user:alice")
	for name, k := range map[string]*keyring.Keyring{"eraser": kr, "other process": cold} {
		if _, err := k.Open(ctx, db, sealed, binding); !errors.Is(err, keyring.ErrErased) {
			t.Fatalf("%s: open under a new key of the subject: %v, want ErrErased", name, err)
		}
	}
	// Bob is untouched.
	bk, err := kr.Key(ctx, db, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	bs, _ := keyring.Seal(bk, binding, []byte("bob"))
	if got, err := kr.Open(ctx, db, bs, binding); err != nil || string(got) != "bob" {
		t.Fatalf("bob: %q, %v", got, err)
	}
}

func TestKeyring_SQLite(t *testing.T) {
	keyringTests(t, mustSQLite(t), nil)
}

// Example_seal makes a key for a subject, seals a payload, opens it, and
// erases the subject: what was sealed no longer opens.
func Example_seal() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keyring")
	defer os.RemoveAll(dir)
	db, _ := sql.Open("sqlite", filepath.Join(dir, "rath.db"))
	defer db.Close()
	if _, err := migrations.Up(ctx, db); err != nil {
		panic(err)
	}
	kekFile := filepath.Join(dir, "kek")
	if err := keyring.GenerateKEKFile(kekFile); err != nil {
		panic(err)
	}
	kek, err := keyring.LoadKEKFile(kekFile)
	if err != nil {
		panic(err)
	}
	kr := keyring.New(kek, nil)
	if _, err := kr.Create(ctx, db, "user:alice"); err != nil {
		panic(err)
	}
	dk, _ := kr.Key(ctx, db, "user:alice")
	sealed, _ := keyring.Seal(dk, []byte("run-1"), []byte(`{"text":"hello"}`))
	subject, _ := keyring.SealedSubject(sealed)
	plain, _ := kr.Open(ctx, db, sealed, []byte("run-1"))
	fmt.Println(subject, string(plain))

	if _, err := kr.Erase(ctx, db, "user:alice"); err != nil {
		panic(err)
	}
	_, err = kr.Open(ctx, db, sealed, []byte("run-1"))
	fmt.Println(errors.Is(err, keyring.ErrErased))
	// Output:
	// user:alice {"text":"hello"}
	// true
}

// SealFixed seals equal inputs to equal bytes (a rebuilt read model
// equals the one built as events came) and distinct ones to distinct
// nonces; Open opens it like Seal's, and not under another binding, nor
// once the key is erased.
func TestSealFixed(t *testing.T) {
	ctx := t.Context()
	db, kr, dk := aliceKey(t)
	const canary = "canary-51c0: alice's params"
	bind := []byte("runs.params\x00r-1")
	a, b := keyring.SealFixed(dk, bind, []byte(canary)), keyring.SealFixed(dk, bind, []byte(canary))
	if !bytes.Equal(a, b) {
		t.Fatalf("SealFixed twice: %s and %s, want equal bytes", a, b)
	}
	if bytes.Contains(a, []byte(canary)) || !keyring.IsSealed(a) {
		t.Fatalf("SealFixed = %s: want the sealed form without the plaintext", a)
	}
	other := keyring.SealFixed(dk, bind, []byte(canary+"!"))
	var fa, fo struct{ N string }
	if err := json.Unmarshal(a, &fa); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(other, &fo); err != nil {
		t.Fatal(err)
	}
	if fa.N == fo.N {
		t.Fatal("two plaintexts sealed with the same nonce")
	}
	pt, err := kr.Open(ctx, db, a, bind)
	if err != nil || string(pt) != canary {
		t.Fatalf("Open = %q, %v", pt, err)
	}
	if _, err := kr.Open(ctx, db, a, []byte("runs.error\x00r-1")); !errors.Is(err, keyring.ErrSealed) {
		t.Fatalf("Open under another binding: %v, want ErrSealed", err)
	}
	if _, err := kr.Erase(ctx, db, "user:alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Open(ctx, db, a, bind); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("Open after the erasure: %v, want ErrErased", err)
	}
}

// countingQuerier counts the reads of the erasure generation and makes
// each take a while, so that callers arriving together overlap.
type countingQuerier struct {
	*sql.DB
	reads atomic.Int64
}

func (q *countingQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if strings.Contains(query, "store_meta") {
		q.reads.Add(1)
		time.Sleep(50 * time.Millisecond)
	}
	return q.DB.QueryRowContext(ctx, query, args...)
}

// Appenders that find the generation stale together (at the start, and
// once per Freshness) wait for one read of it instead of each reading it.
func TestEpoch_OneReadForConcurrentCallers(t *testing.T) {
	q := &countingQuerier{DB: mustSQLite(t)}
	kr := keyring.New(keyringtest.KEK(t), nil)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := kr.Epoch(t.Context(), q); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := q.reads.Load(); got != 1 {
		t.Fatalf("16 callers read the generation %d times, want 1", got)
	}
}

// Seals from many goroutines, of payloads and bindings of every length
// (each seal's scratch comes from a pool the others return theirs to),
// all open to what was sealed, under the binding each was sealed with.
func TestSeal_ConcurrentSealsOfEveryLength(t *testing.T) {
	ctx := t.Context()
	db, kr, dk := aliceKey(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 300 {
				pt := []byte(strings.Repeat(string(rune('a'+g)), n*7%1500))
				bind := []byte(fmt.Sprintf("event\x00s-%d\x00%s", g, strings.Repeat("t", n%40)))
				sealed, err := keyring.Seal(dk, bind, pt)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := kr.Open(ctx, db, sealed, bind)
				if err != nil || !bytes.Equal(got, pt) {
					t.Errorf("goroutine %d, length %d: opened %d bytes, %v", g, len(pt), len(got), err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// aliceKey returns a store, a keyring and the key it made for user:alice.
func aliceKey(t *testing.T) (*sql.DB, *keyring.Keyring, *keyring.DataKey) {
	t.Helper()
	db := mustSQLite(t)
	kr := keyring.New(keyringtest.KEK(t), nil)
	dk, err := kr.Create(t.Context(), db, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	return db, kr, dk
}

// statementCounter counts the statements run through it.
type statementCounter struct {
	*sql.DB
	n atomic.Int64
}

func (q *statementCounter) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q.n.Add(1)
	return q.DB.ExecContext(ctx, query, args...)
}

func (q *statementCounter) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	q.n.Add(1)
	return q.DB.QueryRowContext(ctx, query, args...)
}

// Every run and session of a sealed store makes a key: making one is one
// statement, the insert, which returns the key it made without reading
// it back. A subject that has a key keeps it, and Create returns that one.
func TestCreate_OneStatementForANewKey(t *testing.T) {
	ctx := t.Context()
	q := &statementCounter{DB: mustSQLite(t)}
	kr := keyring.New(keyringtest.KEK(t), nil)
	made, err := kr.Create(ctx, q, "run:r1")
	if err != nil {
		t.Fatal(err)
	}
	if got := q.n.Load(); got != 1 {
		t.Fatalf("making a key took %d statements, want 1", got)
	}
	again, err := kr.Create(ctx, q, "run:r1")
	if err != nil || again.ID != made.ID {
		t.Fatalf("a second Create: key %v, %v; want the first one, %s", again, err, made.ID)
	}
	// The key made opens what it sealed, as read from the table.
	sealed, err := keyring.Seal(made, []byte("b"), []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := kr.Open(ctx, q, sealed, []byte("b")); err != nil || string(got) != "hello" {
		t.Fatalf("Open = %q, %v", got, err)
	}
}
