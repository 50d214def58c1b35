//go:build integration

package keyring_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/migrations"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }) }

func TestKeyring_Postgres(t *testing.T) {
	keyringTests(t, migratedDB(t, "keyring"), func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })
}

// migratedDB is a new database on the test server with rath's tables.
func migratedDB(t *testing.T, name string) *sql.DB {
	t.Helper()
	dsn, err := pg.CreateDatabase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := migrations.Up(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// FindOrCreate finds a subject's key or makes it in one statement, and
// caches it: a new subject's key costs the insert alone, one another
// keyring made is the one found, and an erased subject gets a new key.
func TestFindOrCreate_Postgres(t *testing.T) {
	ctx := t.Context()
	db := migratedDB(t, "findorcreate")
	rebind := func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }
	kek := keyringtest.KEK(t)
	q := &statementCounter{DB: db}
	kr, other := keyring.New(kek, rebind), keyring.New(kek, rebind)

	// A new subject: the erasure generation's read and the one statement.
	made, err := kr.FindOrCreate(ctx, q, "run:new")
	if err != nil {
		t.Fatal(err)
	}
	if n := q.n.Load(); n > 2 {
		t.Fatalf("finding or making a new key took %d statements; want the generation's read and one", n)
	}
	before := q.n.Load()
	if got, err := kr.Key(ctx, q, "run:new"); err != nil || got.ID != made.ID {
		t.Fatalf("Key = %v, %v; want the key made, %s", got, err, made.ID)
	}
	if n := q.n.Load() - before; n != 0 {
		t.Fatalf("Key after FindOrCreate ran %d statements; want the cache's answer", n)
	}

	// A key another keyring made is the one found, and opens its content.
	theirs, err := other.Create(ctx, db, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := keyring.Seal(theirs, []byte("b"), []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	found, err := kr.FindOrCreate(ctx, q, "user:bob")
	if err != nil || found.ID != theirs.ID {
		t.Fatalf("FindOrCreate of an existing subject = %v, %v; want %s", found, err, theirs.ID)
	}
	if got, err := kr.Open(ctx, db, sealed, []byte("b")); err != nil || string(got) != "hello" {
		t.Fatalf("the key found opens %q, %v", got, err)
	}

	// Erased by the other keyring: a fresh keyring makes a new key.
	if _, err := other.Erase(ctx, db, "user:bob"); err != nil {
		t.Fatal(err)
	}
	again, err := keyring.New(kek, rebind).FindOrCreate(ctx, db, "user:bob")
	if err != nil || again.ID == theirs.ID {
		t.Fatalf("FindOrCreate after an erasure = %v, %v; want a new key", again, err)
	}

	if _, err := kr.FindOrCreate(ctx, db, "no level"); !errors.Is(err, keyring.ErrSubject) {
		t.Fatalf("FindOrCreate of an invalid subject: %v; want ErrSubject", err)
	}
}
