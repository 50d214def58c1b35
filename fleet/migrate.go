package fleet

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/gorath/rath/eventlog"
)

// Migrate creates or updates the job queue's tables (River's) in the
// store at target (a SQLite file's path or a PostgreSQL DSN) and returns
// their version. `rath migrate up` calls it, so that a store is complete
// before any submitter or worker starts: otherwise the first of them
// creates the tables, with several processes racing to do it.
func Migrate(ctx context.Context, target string) (int, error) {
	var (
		db     *sql.DB
		driver riverdriver.Driver[*sql.Tx]
	)
	if eventlog.IsPostgresDSN(target) {
		cfg, err := eventlog.ParsePostgresDSN(target)
		if err != nil {
			return 0, err
		}
		db = stdlib.OpenDB(*cfg)
		driver = riverdatabasesql.New(db)
	} else {
		var err error
		if db, err = openQueueSQLite(target); err != nil {
			return 0, fmt.Errorf("fleet: %w", err)
		}
		driver = riversqlite.New(db)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, driver, db); err != nil {
		return 0, err
	}
	v, err := riverVersion(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("fleet: river migrations: %w", err)
	}
	return v, nil
}

// openQueueSQLite opens the SQLite file at path for River: writes take
// the lock up front (IMMEDIATE), and a busy database is waited for.
func openQueueSQLite(path string) (*sql.DB, error) {
	return sql.Open("sqlite", eventlog.DSN(path, false, "busy_timeout(10000)", "journal_mode(WAL)")+"&_txlock=immediate")
}
