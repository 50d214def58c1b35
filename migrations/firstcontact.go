package migrations

import (
	"context"
	"errors"
	"time"
)

// openBusyWait bounds how long a first statement waits for another
// process's first write to a new SQLite store: as long as the busy
// timeout rath opens stores with.
const openBusyWait = 10 * time.Second

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// waitOutOpen runs a database's first statement, again while it fails
// with SQLITE_BUSY, up to openBusyWait. Opening a connection with
// journal_mode(WAL) switches a new database to WAL mode, which needs the
// database's exclusive lock and does not call the busy handler: a process
// opening a new store while another was writing to it (its own switch to
// WAL, its first migration) was refused at once, "database is locked",
// where any other lock held a moment is waited for. Once the database is
// in WAL mode the switch takes no lock, and the connection, kept by the
// pool, serves what follows.
func waitOutOpen(ctx context.Context, first func() error) error {
	deadline := time.Now().Add(openBusyWait)
	for {
		err := first()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se interface{ Code() int }
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}
