package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3/lock"
)

// LockSuffix names the file, beside a SQLite database, whose kernel lock
// (flock) a process holds while it migrates that database: created the
// first time a process finds migrations pending, with the database's
// permissions.
const LockSuffix = "-migrate"

// LockID is the PostgreSQL advisory lock a process holds, on the
// connection that migrates, while it migrates: goose's own key, so rath
// binaries that lock through goose exclude this one too.
const LockID = lock.DefaultLockID

// The lockers run inside goose: it takes the lock on the connection it
// then migrates through, lists the applied versions under the lock (the
// re-check: a process that waited finds what the winner applied and
// applies nothing), and lets go at the end. A process that finds the
// schema current never gets here (current): an open of a migrated store
// takes no lock.

// pgLocker holds PostgreSQL's session advisory lock LockID while goose
// migrates. It waits in the server (pg_advisory_lock), so a waiter goes
// on the moment the holder lets go; goose's own locker polls every 5 s.
// A connection's end (the process killed) releases it.
type pgLocker struct{}

func (pgLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, LockID); err != nil {
		return fmt.Errorf("migrations: take the migration lock: %w", err)
	}
	return nil
}

func (pgLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, LockID); err != nil {
		return fmt.Errorf("migrations: release the migration lock: %w", err)
	}
	return nil
}

// sqliteLocker holds the flock of the database file's LockSuffix file
// while goose migrates. SQLite's write lock alone does not serialize
// migrations: goose lists the applied versions outside the transaction
// that applies one, so two processes opening a new store both found
// version 1 pending and the second failed ("table events already
// exists"). An in-memory database (no file) is private to its process,
// where upMu serializes.
type sqliteLocker struct {
	held *fileLock // nil when unlocked or in memory
}

func (l *sqliteLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	fl, err := lockDatabaseFile(ctx, conn)
	l.held = fl
	return err
}

// queryRower is a *sql.DB or a *sql.Conn.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// lockDatabaseFile takes the migration lock of the SQLite database q
// reads; nil (and no lock) for an in-memory database.
func lockDatabaseFile(ctx context.Context, q queryRower) (*fileLock, error) {
	var path string
	if err := q.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		return nil, fmt.Errorf("migrations: take the migration lock: %w", err)
	}
	if path == "" {
		return nil, nil
	}
	fl, err := lockFile(ctx, path, path+LockSuffix)
	if err != nil {
		return nil, fmt.Errorf("migrations: take the migration lock: %w", err)
	}
	return fl, nil
}

// LockSQLite takes the lock rath's migrations run under in the SQLite
// database db, for a caller that creates tables of its own there (the job
// queue's, package fleet): two processes opening a new store would
// otherwise race to create them too. It waits until ctx ends, and returns
// the lock's release.
func LockSQLite(ctx context.Context, db *sql.DB) (release func() error, err error) {
	fl, err := lockDatabaseFile(ctx, db)
	if err != nil {
		return nil, err
	}
	return fl.unlock, nil
}

func (l *sqliteLocker) SessionUnlock(context.Context, *sql.Conn) error {
	fl := l.held
	l.held = nil
	return fl.unlock()
}
