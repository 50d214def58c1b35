package migrations_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gorath/rath/migrations"
	_ "modernc.org/sqlite"
)

func TestLatest_IsTheHighestEmbeddedMigration(t *testing.T) {
	db := open(t)
	if _, err := migrations.Up(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	st, err := migrations.Status(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := migrations.Latest(), st[len(st)-1].Version; got != want {
		t.Fatalf("Latest() = %d, the last embedded migration is %d", got, want)
	}
}

// A database migrated by a newer binary is refused, naming both versions,
// and left as it was.
func TestUp_RefusesANewerSchema(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Fatalf("check of a current database: %v", err)
	}
	newer := migrations.Latest() + 7
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, newer); err != nil {
		t.Fatal(err)
	}
	n, err := migrations.Up(ctx, db)
	var tooNew *migrations.SchemaTooNewError
	if n != 0 || !errors.As(err, &tooNew) || !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Fatalf("Up = %d, %v; want a *SchemaTooNewError", n, err)
	}
	if tooNew.Database != newer || tooNew.Binary != migrations.Latest() {
		t.Fatalf("error = %+v, want database %d binary %d", tooNew, newer, migrations.Latest())
	}
	for _, v := range []int64{newer, migrations.Latest()} {
		if !strings.Contains(err.Error(), " "+itoa(v)) {
			t.Fatalf("error %q does not name version %d", err, v)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "rath.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}
