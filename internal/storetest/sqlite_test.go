package storetest_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/storetest"
)

func sqliteTarget(t testing.TB) storetest.Target {
	dir := t.TempDir()
	raw := func(t testing.TB) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, rath.DBFile)+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	exec := func(t testing.TB, q string) error {
		db := raw(t)
		defer db.Close()
		_, err := db.Exec(q)
		return err
	}
	return storetest.Target{
		Dir:  dir,
		Exec: exec,
		Files: func(t testing.TB) []string {
			files, _ := filepath.Glob(filepath.Join(dir, rath.DBFile+"*"))
			return files
		},
		DropGuards: func(t testing.TB) {
			for _, q := range []string{`DROP TRIGGER events_no_update`, `DROP TRIGGER events_no_delete`, `DROP TRIGGER tree_hashes_no_update`, `DROP TRIGGER tree_hashes_no_delete`, `DROP TRIGGER redactions_no_update`, `DROP TRIGGER redactions_no_delete`} {
				if err := exec(t, q); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
}

func TestConformance_SQLite(t *testing.T) {
	storetest.Run(t, storetest.Backend{Name: "sqlite", New: sqliteTarget})
}
