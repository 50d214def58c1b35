package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// openBusyWait bounds how long Up waits for another process to end its
// first write to a new SQLite store: as long as the busy timeout rath
// opens stores with.
const openBusyWait = 10 * time.Second

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// firstContact runs a first statement on a SQLite database, retrying
// while it fails with SQLITE_BUSY. Opening a connection with
// journal_mode(WAL) switches a new database to WAL mode, which needs the
// database's exclusive lock and does not call the busy handler: a process
// opening a new store while another is writing to it (its own switch to
// WAL, its first migration) was refused at once, "database is locked",
// where any other lock held a moment is waited for. Once the database is
// in WAL mode, the switch takes no lock, and the connection, kept by the
// pool, serves what follows.
func firstContact(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(openBusyWait)
	for {
		var one int
		err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("migrations: open the database: %w", err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrations: open the database: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se interface{ Code() int }
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}
