package eventlog

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// dialect is everything that differs between the two databases the log
// runs on, so that the store's and the writer's methods say what they do
// once: how the pools are opened, placeholders, how a hash is kept, how a
// write transaction begins and commits (SQLite's file lock and write
// gate; PostgreSQL's chain lock, its batched rows and its NOTIFY), how
// other processes' commits are heard, and which failures are a lost
// connection worth one retry. sqliteDialect (dialect_sqlite.go) and
// postgresDialect (dialect_postgres.go) are its two implementations; Open
// picks one from Options.
//
// The writer's methods run on the writer goroutine only (or in Open,
// before it starts), and may change w.
type dialect interface {
	// open opens the writer's pool of one connection and the read pool.
	// roundTrips counts the writer's round trips, where they are counted.
	open(ctx context.Context, opts Options, roundTrips *atomic.Int64) (wdb *sql.DB, rdb *sqlx.DB, err error)
	// openKeys opens the pool a sealed store's keyring reads and makes
	// keys through (Store.kdb), connecting on first use.
	openKeys(opts Options) (*sql.DB, error)
	// target is where the database is (Store.Target).
	target() string
	// rebind turns a query's ? placeholders into the dialect's.
	rebind(query string) string
	// storedHash is the hash column's value for a hex leaf hash.
	storedHash(hash string) any
	// snapshotOptions begin a read transaction that sees one state of
	// the database for its whole life.
	snapshotOptions() *sql.TxOptions
	// clockNanos is an SQL expression for the database server's clock
	// in nanoseconds since the epoch, or "" where the processes sharing
	// the database share a machine's clock instead (Store.Now).
	clockNanos() string
	// retryRead reports whether a read that failed with err may be tried
	// again once on a new connection: the old one was lost.
	retryRead(err error) bool
	// startListening makes other processes' commits wake s's waiters
	// (Notify), from the first call on; stopListening, once s.stop is
	// closed, waits for that to end and keeps it from starting later.
	startListening(s *Store)
	stopListening()

	// initWriter prepares w and checks the schema, on w's new connection.
	initWriter(ctx context.Context, w *writerState) error
	// connectErr is the error of a failed dial of the writer's connection;
	// connected is told of a new one.
	connectErr(err error) error
	connected(w *writerState)
	// disconnect drops the writer's connection after a failure that may
	// have broken it; the next write dials again.
	disconnect(w *writerState)
	// dataVersion reads the counter that moves when another connection
	// commits (0 where the dialect finds such commits at begin instead).
	dataVersion(ctx context.Context, conn *sql.Conn) (int64, error)
	// beginRead is the statement that begins reload's read transaction.
	beginRead() string
	// begin opens the write transaction for batch (nil for Exclusive
	// and the tree's build), holding the chain's write lock, and brings
	// the writer's caches up to date with other connections' commits.
	begin(ctx context.Context, w *writerState, batch []*request) error
	// copied records, in a copy's transaction, that the log now ends at
	// head (PostgreSQL's chain counter, sequencer.go).
	copied(tx *Tx, head int64) error
	// abortsOnError reports whether a failed statement aborts the whole
	// transaction, so that a failed read still spoils the batch.
	abortsOnError() bool
	// readShared turns a query of rows into one that keeps them from
	// being deleted until the transaction ends, where the writer alone
	// does not (sealcheck.go).
	readShared(query string) string
	// batchesRows reports whether a batch's rows are collected and sent
	// in one statement at its end (pgbatch.go) rather than one by one.
	batchesRows() bool
	// seesOtherCommits reports whether begin reloads the caches whenever
	// another connection committed since the writer's last transaction
	// (SQLite's data_version): what the writer read of committed state
	// stays true until then.
	seesOtherCommits() bool
	// keysOutsideWriter reports whether a subject's new key is made on
	// the keyring's pool, outside the writer: PostgreSQL's connections
	// can write, SQLite's other connections are query_only.
	keysOutsideWriter() bool
	// absorb takes off the queue, for a batch that now holds the write
	// lock, the appends that came while it waited for it (absorb.go).
	absorb(w *writerState, local []*request) []*request
	// beforeCommit runs just before the COMMIT of the writer's open
	// transaction.
	beforeCommit(ctx context.Context, w *writerState) error
	// storeTree stores the open batch's tree rows (ids and their packed
	// hashes) and the new head (with commit, a transaction begun in the
	// lock's pipeline commits in the same round trip).
	storeTree(ctx context.Context, w *writerState, ids []int64, rows [][]byte, head string, commit bool) error
}

// newDialect is the dialect of the database opts name: PostgreSQL for a
// DSN, else SQLite.
func newDialect(opts Options) dialect {
	if opts.DSN != "" {
		return newPostgresDialect(opts)
	}
	return &sqliteDialect{path: opts.Path}
}

// checkTables fails unless every table is in the schema; probe counts
// the tables of one name.
func checkTables(ctx context.Context, conn *sql.Conn, probe string, tables ...string) error {
	for _, t := range tables {
		var n int
		if err := conn.QueryRowContext(ctx, probe, t).Scan(&n); err != nil {
			return fmt.Errorf("eventlog: open: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("eventlog: open: no %s table (run the migrations first)", t)
		}
	}
	return nil
}

// insertTreeHead stores the tree's rows with one INSERT per maxTreeRows,
// and records its head; combined puts the last INSERT and the head's
// UPSERT in one statement (a data-modifying WITH, which SQLite lacks).
func (w *writerState) insertTreeHead(ctx context.Context, rowIDs []int64, rows [][]byte, head string, combined bool) error {
	for start := 0; start < len(rowIDs) || combined && start == 0; start += maxTreeRows {
		part := rowIDs[start:min(start+maxTreeRows, len(rowIDs))]
		args := make([]any, 0, 2*len(part)+2)
		for i, id := range part {
			args = append(args, id, rows[start+i])
		}
		query := insertTreeRows(len(part))
		if combined && start+maxTreeRows >= len(rowIDs) {
			query, args = upsertMeta, append(args, metaMerkleHead, head)
			if len(part) > 0 {
				query = `WITH t AS (` + insertTreeRows(len(part)) + `) ` + query
			}
		}
		if err := w.exec(ctx, query, args...); err != nil {
			if uniqueViolation(err) {
				return fmt.Errorf("eventlog: store the Merkle tree (%d leaves from %d): a tree hash is taken (another writer, or the tree was altered): %w", len(w.leaves), w.treeSize, err)
			}
			return storageErr("store the Merkle tree", err)
		}
	}
	if combined {
		return nil
	}
	if err := w.exec(ctx, upsertMeta, metaMerkleHead, head); err != nil {
		return storageErr("record the Merkle tree head", err)
	}
	return nil
}

// upsertMeta sets a store_meta row.
const upsertMeta = `INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`

// uniqueViolation reports whether err is either database's refusal of a
// row whose key is taken.
func uniqueViolation(err error) bool {
	return sqliteCode(err) == sqliteConstraint || pgCode(err) == pgUniqueViolation
}
