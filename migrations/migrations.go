package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// One directory of migrations per SQL dialect, with the same versions:
// a schema version means the same tables on both.
//
//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// upMu serializes the migrations of one process; across processes the
// lockers of lock.go do (a file lock on SQLite, an advisory lock on
// PostgreSQL). An in-memory database has only this one.
var upMu sync.Mutex

// Dialect names the SQL dialect of a database handle.
type Dialect string

// The dialects rath's schema exists in.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DialectOf tells the dialect of db from its driver: pgx's database/sql
// driver means PostgreSQL, anything else SQLite.
func DialectOf(db *sql.DB) Dialect {
	if _, ok := db.Driver().(*stdlib.Driver); ok {
		return Postgres
	}
	return SQLite
}

func dialectFiles(d Dialect) fs.FS {
	sub, err := fs.Sub(files, string(d))
	if err != nil {
		panic(fmt.Sprintf("migrations: embedded files: %v", err)) // embed.FS cannot fail here
	}
	return sub
}

// Migration is one migration and whether it has been applied.
type Migration struct {
	Version int64  `json:"version"`
	Source  string `json:"source"`
	Applied bool   `json:"applied"`
	// AppliedAt is empty when the migration is pending.
	AppliedAt string `json:"applied_at,omitempty"`
}

// provider is goose applying the embedded migrations of db's dialect
// under the migration lock of lock.go.
func provider(db *sql.DB) (*goose.Provider, error) {
	d := DialectOf(db)
	files, err := migrationFiles(d)
	if err != nil {
		return nil, err
	}
	ms := make([]*goose.Migration, 0, len(files))
	for _, f := range files {
		ms = append(ms, goose.NewGoMigration(f.version,
			&goose.GoFunc{RunTx: runStatements(f, f.up)},
			&goose.GoFunc{RunTx: runStatements(f, f.down)}))
	}
	locker := lock.SessionLocker(&sqliteLocker{})
	if d == Postgres {
		locker = pgLocker{}
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(ms...), goose.WithSessionLocker(locker)}
	// No file system: every migration is one of ms (see split).
	p, err := goose.NewProvider(gooseDialect(d), db, nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: new provider: %w", err)
	}
	return p, nil
}

// versionTable is goose's table of applied versions (its default name).
const versionTable = "goose_db_version"

// gooseDialect is goose's name for dialect d.
func gooseDialect(d Dialect) database.Dialect {
	if d == Postgres {
		return database.DialectPostgres
	}
	return database.DialectSQLite3
}

// versionTableExists reports whether db has goose's version table.
func versionTableExists(ctx context.Context, db *sql.DB) (bool, error) {
	probe := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`
	if DialectOf(db) == Postgres {
		probe = `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`
	}
	var n int
	if err := db.QueryRowContext(ctx, probe, versionTable).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// fileVersion is the version a migration file's name starts with
// ("00014_packed_tree_rows.sql" is 14); ok is false for any other file.
func fileVersion(name string) (v int64, ok bool) {
	num, _, cut := strings.Cut(name, "_")
	v, err := strconv.ParseInt(num, 10, 64)
	return v, cut && err == nil && strings.HasSuffix(name, ".sql")
}

// migrationFile is one embedded migration file, split into statements.
type migrationFile struct {
	version  int64
	name     string
	up, down []string
}

// migrationFiles returns dialect d's embedded files, split into
// statements, in version order.
func migrationFiles(d Dialect) ([]migrationFile, error) {
	fsys := dialectFiles(d)
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: embedded files: %w", err)
	}
	var out []migrationFile
	for _, e := range entries {
		v, ok := fileVersion(e.Name())
		if !ok {
			continue
		}
		src, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: embedded files: %w", err)
		}
		f := migrationFile{version: v, name: e.Name()}
		if f.up, f.down, err = split(string(d)+"/"+e.Name(), string(src)); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// runStatements runs one section of a migration file, in the
// transaction goose opens for the migration.
func runStatements(f migrationFile, stmts []string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		for i, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s, statement %d: %w", f.name, i+1, privilegeErr(f, err))
			}
		}
		return nil
	}
}

// ErrSchemaTooNew is matched by a *SchemaTooNewError.
var ErrSchemaTooNew = errors.New("migrations: the database schema is newer than this binary")

// SchemaTooNewError reports a database migrated by a newer rath than the
// one running: this binary does not know its schema, and writing to it
// could break the data or the newer binary's invariants. It matches
// ErrSchemaTooNew with errors.Is.
type SchemaTooNewError struct {
	Database int64 // the database's schema version
	Binary   int64 // the highest migration this binary embeds
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("migrations: the database is at schema version %d, newer than this binary's %d: use a rath at least as new as the one that wrote it", e.Database, e.Binary)
}

// Is makes errors.Is(err, ErrSchemaTooNew) true.
func (e *SchemaTooNewError) Is(target error) bool { return target == ErrSchemaTooNew }

// Latest returns the highest migration version this binary embeds.
func Latest() int64 {
	entries, err := fs.ReadDir(dialectFiles(SQLite), ".")
	if err != nil {
		panic(fmt.Sprintf("migrations: embedded files: %v", err)) // embed.FS cannot fail here
	}
	var versions []int64
	for _, e := range entries {
		if v, ok := fileVersion(e.Name()); ok {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	if len(versions) == 0 {
		return 0
	}
	return versions[len(versions)-1]
}

// Check returns a *SchemaTooNewError when the database records a
// migration newer than this binary's latest, and nil for a database that
// is current, behind, or not migrated at all.
func Check(ctx context.Context, db *sql.DB) error {
	exists, err := versionTableExists(ctx, db)
	if err != nil {
		return fmt.Errorf("migrations: check version: %w", err)
	}
	if !exists {
		return nil
	}
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version`).Scan(&v); err != nil {
		return fmt.Errorf("migrations: check version: %w", err)
	}
	if latest := Latest(); v > latest {
		return &SchemaTooNewError{Database: v, Binary: latest}
	}
	return nil
}

// Up applies every pending migration and returns how many it applied. It
// refuses (a *SchemaTooNewError) a database written by a newer schema.
//
// A current database costs one query and no lock. Otherwise Up takes the
// migration lock (lock.go), which another process migrating the same
// database holds until it is done, and then applies what is still
// pending: processes opening a new store together all succeed, one
// migrating, the others waiting and then finding the schema current.
func Up(ctx context.Context, db *sql.DB) (int, error) {
	if ok, err := current(ctx, db); ok || err != nil {
		return 0, err
	}
	upMu.Lock()
	defer upMu.Unlock()
	if err := Check(ctx, db); err != nil {
		return 0, err
	}
	p, err := provider(db)
	if err != nil {
		return 0, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrations: up: %w", err)
	}
	return len(res), nil
}

// UpTo applies the pending migrations up to and including version: for
// tests that build a store as an older rath left it.
func UpTo(ctx context.Context, db *sql.DB, version int64) error {
	upMu.Lock()
	defer upMu.Unlock()
	p, err := provider(db)
	if err != nil {
		return err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("migrations: up to %d: %w", version, err)
	}
	return nil
}

// Status lists every embedded migration in version order. It reads the
// version table as goose does, but without the migration lock and
// without creating the table: listing a store (rath migrate status, or
// the CLI asking whether a PostgreSQL database holds a store) never
// waits for, or delays, a process that migrates.
func Status(ctx context.Context, db *sql.DB) ([]Migration, error) {
	d := DialectOf(db)
	files, err := migrationFiles(d)
	if err != nil {
		return nil, err
	}
	exists, err := versionTableExists(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("migrations: status: %w", err)
	}
	var store database.Store
	if exists {
		if store, err = database.NewStore(gooseDialect(d), versionTable); err != nil {
			return nil, fmt.Errorf("migrations: status: %w", err)
		}
	}
	out := make([]Migration, 0, len(files))
	for _, f := range files {
		m := Migration{Version: f.version, Source: f.name}
		if store != nil {
			r, err := store.GetMigration(ctx, db, f.version)
			switch {
			case errors.Is(err, database.ErrVersionNotFound):
			case err != nil:
				return nil, fmt.Errorf("migrations: status: %w", err)
			default:
				m.Applied = true
				if !r.Timestamp.IsZero() {
					m.AppliedAt = r.Timestamp.UTC().Format("2006-01-02T15:04:05Z")
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// DropReadIndexes drops from a migrated SQLite database the event log's
// indexes that serve reads by run and by type, and nothing else (no
// constraint depends on them). It is for a throwaway store that holds
// about one run (a replay's scratch store): there, reads by run or type
// scan a small log, and each event written updates two b-trees fewer.
// Never for a store that is kept: later migrations expect the indexes.
func DropReadIndexes(ctx context.Context, db *sql.DB) error {
	for _, name := range []string{"events_run", "events_type"} {
		if _, err := db.ExecContext(ctx, "DROP INDEX IF EXISTS "+name); err != nil {
			return fmt.Errorf("migrations: drop index %s: %w", name, err)
		}
	}
	return nil
}

// OpenInMemory opens the in-memory SQLite database dsn names (see
// eventlog.DSN with inMemory set), applies the migrations, and returns the
// handle that keeps it alive: an in-memory database lives while one of its
// connections is open, so the handle holds exactly one, forever, until
// Close. The sqlite driver must be registered (package events does).
func OpenInMemory(ctx context.Context, dsn string) (*sql.DB, error) {
	keeper, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("migrations: open in-memory database: %w", err)
	}
	keeper.SetMaxOpenConns(1)
	keeper.SetConnMaxLifetime(0)
	keeper.SetConnMaxIdleTime(0)
	if _, err := Up(ctx, keeper); err != nil {
		keeper.Close()
		return nil, err
	}
	return keeper, nil
}

// ErrPrivilege is matched by a *PrivilegeError.
var ErrPrivilege = errors.New("migrations: the migrating user lacks a privilege")

// PrivilegeError is a migration the migrating user was refused for want
// of a privilege of the cluster's (PostgreSQL's insufficient_privilege):
// it names the privilege and what an administrator grants instead. It
// matches ErrPrivilege with errors.Is and unwraps to the server's error.
type PrivilegeError struct {
	Migration string // the file: "00018_tenants.sql"
	Privilege string // "CREATEROLE"
	Grant     string // what an administrator runs instead of granting it
	Err       error
}

func (e *PrivilegeError) Error() string {
	return fmt.Sprintf("migrations: %s needs a migrating user with %s: grant it, or have an administrator run %s: %v", e.Migration, e.Privilege, e.Grant, e.Err)
}

func (e *PrivilegeError) Is(target error) bool { return target == ErrPrivilege }
func (e *PrivilegeError) Unwrap() error        { return e.Err }

// privileges are the cluster privileges migrations need beyond owning
// the schema, by version, and what an administrator grants instead.
var privileges = map[int64]struct{ privilege, grant string }{
	// 00018 creates the role rath_tenant, which a tenant's reads take,
	// and makes the migrating user a member of it.
	18: {"CREATEROLE", "CREATE ROLE rath_tenant NOLOGIN NOBYPASSRLS; GRANT rath_tenant TO <the migrating user>"},
}

// insufficientPrivilege is PostgreSQL's SQLSTATE for a refused privilege.
const insufficientPrivilege = "42501"

// privilegeErr names the privilege a refused migration needed, if it is
// one that needs one; other errors are returned as they are.
func privilegeErr(f migrationFile, err error) error {
	var pe *pgconn.PgError
	p, ok := privileges[f.version]
	if !ok || !errors.As(err, &pe) || pe.Code != insufficientPrivilege {
		return err
	}
	return &PrivilegeError{Migration: f.name, Privilege: p.privilege, Grant: p.grant, Err: err}
}
