package rath_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
)

// The runtime directory may hold any character: the database is created
// inside it, not at a path cut short at '?' or '#'.
func TestOpen_DirWithURICharacters(t *testing.T) {
	for _, name := range []string{"we?ird", "we#ird", "we%20ird", "we ird", "wéird"} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			root := t.TempDir()
			dir := filepath.Join(root, name)
			rt, err := rath.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.NewUserSession(ctx, "hello"); err != nil {
				t.Fatal(err)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, rath.DBFile)); err != nil {
				t.Fatalf("database not in %q: %v", dir, err)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 1 {
				t.Fatalf("%s holds %d entries, want only %q", root, len(entries), name)
			}
		})
	}
}

// A store migrated by a newer rath is refused at open, naming both schema
// versions, and nothing is written to it.
func TestOpen_RefusesANewerSchema(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	path := filepath.Join(dir, rath.DBFile)
	db, err := sql.Open("sqlite", events.DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, migrations.Latest()+1); err != nil {
		t.Fatal(err)
	}
	_, err = rath.Open(ctx, dir)
	var tooNew *migrations.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Database != migrations.Latest()+1 || tooNew.Binary != migrations.Latest() {
		t.Fatalf("open = %v, want a *SchemaTooNewError", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("events = %d, %v; want none", n, err)
	}
}
