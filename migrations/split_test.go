package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	_ "modernc.org/sqlite"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }) }

func TestSplit(t *testing.T) {
	cases := []struct {
		name, src string
		up, down  []string
	}{
		{"two sections", "-- +goose Up\nCREATE TABLE a (x INT);\n\n-- a comment\nCREATE INDEX a_x\n  ON a (x); -- trailing\n-- +goose Down\nDROP TABLE a;\n",
			[]string{"CREATE TABLE a (x INT);", "CREATE INDEX a_x\n  ON a (x); -- trailing"}, []string{"DROP TABLE a;"}},
		{"a comment inside a statement stays", "-- +goose Up\nCREATE TABLE a (\n  x INT, -- why\n\n  y INT\n);\n",
			[]string{"CREATE TABLE a (\n  x INT, -- why\n  y INT\n);"}, nil},
		{"a block keeps its semicolons and blank lines", "-- +goose Up\n-- +goose StatementBegin\nCREATE TRIGGER t BEFORE UPDATE ON a BEGIN\n  SELECT 1;\n\n  SELECT 2;\nEND;\n-- +goose StatementEnd\n",
			[]string{"CREATE TRIGGER t BEFORE UPDATE ON a BEGIN\n  SELECT 1;\n\n  SELECT 2;\nEND;"}, nil},
		{"a semicolon inside a comment ends nothing", "-- +goose Up\nSELECT 1 -- not yet;\n;\n", []string{"SELECT 1 -- not yet;\n;"}, nil},
		{"CRLF line ends", "-- +goose Up\r\nSELECT 1;\r\n-- +goose Down\r\nSELECT 2;\r\n", []string{"SELECT 1;"}, []string{"SELECT 2;"}},
		{"comments before the first section", "-- what this is\n\n-- +goose Up\nSELECT 1;\n", []string{"SELECT 1;"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, down, err := split("x.sql", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(up, tc.up) || !slices.Equal(down, tc.down) {
				t.Fatalf("split = %q, %q\nwant %q, %q", up, down, tc.up, tc.down)
			}
		})
	}
}

func TestSplit_RefusesWhatItCannotRead(t *testing.T) {
	cases := []struct{ name, src, says string }{
		{"no section", "SELECT 1;\n", "before -- +goose Up"},
		{"no closing semicolon", "-- +goose Up\nSELECT 1\n", "closing semicolon"},
		{"a section inside a statement", "-- +goose Up\nSELECT 1\n-- +goose Down\n;\n", "unfinished statement"},
		{"an unclosed block", "-- +goose Up\n-- +goose StatementBegin\nSELECT 1;\n", "without StatementEnd"},
		{"an end without a begin", "-- +goose Up\n-- +goose StatementEnd\n", "without StatementBegin"},
		{"a block outside a section", "-- +goose StatementBegin\n", "outside a section"},
		{"NO TRANSACTION", "-- +goose NO TRANSACTION\n-- +goose Up\nSELECT 1;\n", "not supported"},
		{"ENVSUB", "-- +goose Up\n-- +goose ENVSUB ON\nSELECT 1;\n", "not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := split("x.sql", tc.src)
			if !errors.Is(err, ErrMalformedMigration) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "x.sql line ") {
				t.Fatalf("split = %v, want ErrMalformedMigration saying %q with its line", err, tc.says)
			}
		})
	}
}

// The schema rath's own split builds is the one goose builds from the
// same files, on both stores, up to every version and back down: the
// split changes who reads the files, not what runs.
func TestSplit_BuildsTheSchemaGooseBuildsFromTheFiles(t *testing.T) {
	ctx := t.Context()
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			viaFiles, viaSplit := openDialect(t, d, "via_files"), openDialect(t, d, "via_split")
			dialect := database.DialectSQLite3
			if d == Postgres {
				dialect = database.DialectPostgres
			}
			files, err := goose.NewProvider(dialect, viaFiles, dialectFiles(d), goose.WithDisableGlobalRegistry(true))
			if err != nil {
				t.Fatal(err)
			}
			ours, err := provider(viaSplit)
			if err != nil {
				t.Fatal(err)
			}
			same := func(when string) {
				t.Helper()
				a, b := schemaOf(t, viaFiles, d), schemaOf(t, viaSplit, d)
				if !slices.Equal(a, b) {
					t.Fatalf("%s: the schemas differ\ngoose from the files:\n%s\nrath's split:\n%s", when, strings.Join(a, "\n"), strings.Join(b, "\n"))
				}
			}
			for v := int64(1); v <= Latest(); v++ {
				if _, err := files.UpTo(ctx, v); err != nil {
					t.Fatalf("goose from the files, up to %d: %v", v, err)
				}
				if _, err := ours.UpTo(ctx, v); err != nil {
					t.Fatalf("rath's split, up to %d: %v", v, err)
				}
				same(fmt.Sprint("up to ", v))
			}
			if n := len(schemaOf(t, viaSplit, d)); n < 20 {
				t.Fatalf("the latest schema has %d objects: the comparison compares nothing", n)
			}
			for v := Latest() - 1; v >= 0; v-- {
				if _, err := files.DownTo(ctx, v); err != nil {
					t.Fatalf("goose from the files, down to %d: %v", v, err)
				}
				if _, err := ours.DownTo(ctx, v); err != nil {
					t.Fatalf("rath's split, down to %d: %v", v, err)
				}
				same(fmt.Sprint("down to ", v))
			}
		})
	}
}

func openDialect(t *testing.T, d Dialect, name string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if d == SQLite {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), name+".db"))
	} else {
		var dsn string
		if dsn, err = pg.CreateDatabase(t.Context(), name); err == nil {
			db, err = sql.Open("pgx", dsn)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// schemaOf lists every object of the database's schema with its
// definition, and the migration versions it records as applied.
func schemaOf(t *testing.T, db *sql.DB, d Dialect) []string {
	t.Helper()
	q := `SELECT type || ' ' || name || ' ' || tbl_name || ' ' || COALESCE(sql, '') FROM sqlite_master
		UNION ALL SELECT 'version ' || version_id FROM goose_db_version WHERE is_applied`
	if d == Postgres {
		q = `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema()
		UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
		UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
		UNION ALL SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'function ' || proname || ' ' || prosrc FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
		UNION ALL SELECT 'relation ' || relname || ' ' || relkind::text || ' ' || COALESCE(obj_description(oid), '')
			FROM pg_class WHERE relnamespace = current_schema()::regnamespace
		UNION ALL SELECT 'version ' || version_id FROM goose_db_version WHERE is_applied`
	}
	rows, err := db.QueryContext(context.WithoutCancel(t.Context()), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// Every embedded file splits, with statements in its Up section.
func TestSplit_EveryEmbeddedFile(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		files, err := migrationFiles(d)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(files); n == 0 || files[n-1].version != Latest() {
			t.Fatalf("%s: %d files, latest version %d", d, len(files), Latest())
		}
		for i, f := range files {
			if f.version != int64(i+1) {
				t.Errorf("%s/%s: version %d, want %d (no gaps, no repeats)", d, f.name, f.version, i+1)
			}
			if len(f.up) == 0 {
				t.Errorf("%s/%s: no statement in its Up section", d, f.name)
			}
		}
	}
}
