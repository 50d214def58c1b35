package migrations

import (
	"context"
	"database/sql"
)

// current reports whether db is at this binary's latest schema, with one
// query and no lock: every process that opens a store asks, and once
// the database is migrated the answer is yes until a newer binary
// migrates it again, so goose (a lock, its version table read row by
// row) runs only when there is something to do. A database newer than
// this binary is a *SchemaTooNewError. Any failure of the query (no
// version table yet, a fresh database) means "not known to be current":
// the caller takes the full path, which reports real errors. It is the
// first statement of an Up, so it waits out another process's first
// write to a new SQLite store (waitOutOpen).
func current(ctx context.Context, db *sql.DB) (bool, error) {
	var v int64
	err := waitOutOpen(ctx, func() error {
		return db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v)
	})
	if err != nil {
		return false, nil
	}
	latest := Latest()
	if v > latest {
		return false, &SchemaTooNewError{Database: v, Binary: latest}
	}
	return v == latest, nil
}
