package migrations_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorath/rath/migrations"
)

// A process that opens a new store while another is writing to it in its
// first moments (switching the new file to WAL mode is such a write) is
// refused at once: its own switch to WAL finds the other's write lock
// and fails without calling the busy handler. Up waits for it instead,
// as for any lock held a moment, and migrates.
func TestUp_WaitsForAnotherProcessOpeningANewStore(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	// The other process: the new file in its first journal mode, a write
	// transaction holding its write lock.
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `CREATE TABLE first_moments (a INTEGER)`); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(200 * time.Millisecond)
		holder.Rollback() //nolint:errcheck // nothing of it is kept
		close(released)
	}()
	// This process, as rath opens a store to migrate it.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("migrating a new store another process held open a moment: %v", err)
	}
	<-released
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q, %v; want wal", mode, err)
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
}
