package eventlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// sqliteDialect is the log in one SQLite file (or an in-memory database)
// on this machine: processes sharing the file take SQLite's write lock
// through the write gate (writegate_unix.go), a commit of another
// connection shows in PRAGMA data_version, and waiters hear of other
// processes' commits only when they read again.
type sqliteDialect struct {
	path string
}

var _ dialect = (*sqliteDialect)(nil)

func (d *sqliteDialect) open(_ context.Context, opts Options, _ *atomic.Int64) (*sql.DB, *sqlx.DB, error) {
	// _txlock=immediate: the writer's transactions take SQLite's write
	// lock up front, so no read-to-write upgrade can fail with SQLITE_BUSY.
	// secure_delete: what the writer deletes or overwrites (a redacted
	// payload, a dropped blob, a rebuilt projection's rows) is zeroed in
	// its page, and freed pages are zeroed, so no stale cell keeps it in
	// the file (or in the WAL's copy of the page). Appends delete next to
	// nothing: it cost no measurable CPU in the append benchmarks.
	wdb, err := sql.Open("sqlite", DSN(opts.Path, opts.InMemory, append(basePragmas(opts), "synchronous("+opts.Synchronous+")", "secure_delete(1)")...)+"&_txlock=immediate")
	if err != nil {
		return nil, nil, fmt.Errorf("eventlog: open writer: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	rdb, err := sqlx.Open("sqlite", readDSN(opts))
	if err != nil {
		wdb.Close()
		return nil, nil, fmt.Errorf("eventlog: open readers: %w", err)
	}
	rdb.SetMaxOpenConns(opts.ReadConns)
	rdb.SetMaxIdleConns(opts.ReadConns)
	return wdb, rdb, nil
}

// basePragmas are every connection's settings.
func basePragmas(opts Options) []string {
	return []string{fmt.Sprintf("busy_timeout(%d)", max(opts.BusyTimeout.Milliseconds(), 1)), "journal_mode(WAL)", "foreign_keys(1)"}
}

// readDSN is the DSN of a read connection: it cannot write.
func readDSN(opts Options) string {
	return DSN(opts.Path, opts.InMemory, append(basePragmas(opts), "query_only(1)", fmt.Sprintf("mmap_size(%d)", max(opts.ReadMmapBytes, 0)))...)
}

// openKeys: read connections like the read pool's (SQLite makes keys in
// the writer's transaction).
func (d *sqliteDialect) openKeys(opts Options) (*sql.DB, error) {
	db, err := sql.Open("sqlite", readDSN(opts))
	if err != nil {
		return nil, fmt.Errorf("eventlog: open the keyring's readers: %w", err)
	}
	return db, nil
}

func (d *sqliteDialect) target() string { return d.path }

func (d *sqliteDialect) rebind(query string) string { return query }

// storedHash keeps the hash as its 32 bytes, not 64 hex digits.
func (d *sqliteDialect) storedHash(hash string) any {
	if b, err := hex.DecodeString(hash); err == nil && len(b) == 32 {
		return b
	}
	return hash
}

// snapshotOptions: SQLite's read transactions are snapshots already.
func (d *sqliteDialect) snapshotOptions() *sql.TxOptions { return &sql.TxOptions{ReadOnly: true} }

// clockNanos: the processes sharing the file share the machine's clock.
func (d *sqliteDialect) clockNanos() string { return "" }

// retryRead: a file handle is not lost the way a connection is.
func (d *sqliteDialect) retryRead(error) bool { return false }

// startListening: the waiters of other processes sharing the file learn
// of a commit when they read again; nothing is sent between processes.
func (d *sqliteDialect) startListening(*Store) {}
func (d *sqliteDialect) stopListening()        {}

func (d *sqliteDialect) initWriter(ctx context.Context, w *writerState) error {
	if opts := w.s.opts; !opts.InMemory && !opts.withoutWriteGate {
		w.gate = newWriteGate(opts.Path)
	}
	if err := w.connect(ctx); err != nil {
		return err
	}
	return checkTables(ctx, w.conn, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, "events", "store_meta")
}

func (d *sqliteDialect) connectErr(err error) error {
	return fmt.Errorf("eventlog: open writer connection: %w", err)
}

func (d *sqliteDialect) connected(*writerState) {}

// disconnect keeps the connection: it is a file handle.
func (d *sqliteDialect) disconnect(*writerState) {}

func (d *sqliteDialect) dataVersion(ctx context.Context, conn *sql.Conn) (int64, error) {
	var dv int64
	if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
		return 0, storageErr("data_version", err)
	}
	return dv, nil
}

func (d *sqliteDialect) beginRead() string { return `BEGIN` }

// begin opens an IMMEDIATE transaction (the DSN's _txlock), and reloads
// the caches if data_version says another connection committed since the
// writer last looked.
func (d *sqliteDialect) begin(ctx context.Context, w *writerState, _ []*request) error {
	if err := w.beginTx(ctx); err != nil {
		return storageErr("begin", err)
	}
	if w.s.opts.InMemory && w.dataVersion >= 0 {
		// Only this process can write an in-memory database, so its
		// caches go stale only after a failure.
		return nil
	}
	dv, err := d.dataVersion(ctx, w.conn)
	if err != nil {
		w.rollback()
		return err
	}
	if dv != w.dataVersion {
		if err := w.reload(ctx, true); err != nil {
			w.rollback()
			return err
		}
	}
	return nil
}

// abortsOnError: a failed statement fails alone in SQLite.
func (d *sqliteDialect) abortsOnError() bool { return false }

// copied: SQLite's writer numbers rows from the log's tail.
func (d *sqliteDialect) copied(*Tx, int64) error { return nil }

// readShared: one writer at a time, so a read inside its transaction
// already holds what it read.
func (d *sqliteDialect) readShared(query string) string { return query }

func (d *sqliteDialect) batchesRows() bool { return false }

func (d *sqliteDialect) seesOtherCommits() bool { return true }

func (d *sqliteDialect) keysOutsideWriter() bool { return false }

// absorb takes nothing: the batch that waited for the lock goes alone.
func (d *sqliteDialect) absorb(*writerState, []*request) []*request { return nil }

func (d *sqliteDialect) beforeCommit(context.Context, *writerState) error { return nil }

func (d *sqliteDialect) storeTree(ctx context.Context, w *writerState, ids []int64, rows [][]byte, head string, _ bool) error {
	return w.insertTreeHead(ctx, ids, rows, head, false)
}
