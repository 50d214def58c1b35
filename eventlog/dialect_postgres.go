package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// postgresDialect is the log on a PostgreSQL server that many processes
// on many machines share: the chain is serialized by the one row of
// chain_lock, a batch's rows go in one statement with its tree and its
// NOTIFY (pgbatch.go), and every process's waiters wake on LISTEN/NOTIFY.
type postgresDialect struct {
	dsn string

	// The listener (a connection of its own, in LISTEN) starts with the
	// first Notify, not at Open: a process that only appends, such as
	// "rath submit", never subscribes and need not pay for it. Starting
	// late loses nothing: every connect of the listener wakes the
	// waiters, who re-read from their own position. listenDone is
	// closed when it stopped.
	listenCfg  *pgx.ConnConfig
	listenOnce sync.Once
	listenDone chan struct{}

	// stopHoldingLock makes the first append stop the process (SIGSTOP)
	// while it holds the chain lock: the fault of a paused or partitioned
	// writer, for tests (DebugStopHoldingLockEnv). Owned by the writer.
	stopHoldingLock bool
}

var _ dialect = (*postgresDialect)(nil)

func newPostgresDialect(opts Options) *postgresDialect {
	d := &postgresDialect{
		dsn:             opts.DSN,
		listenDone:      make(chan struct{}),
		stopHoldingLock: os.Getenv(DebugStopHoldingLockEnv) == "1",
	}
	if cfg, err := ParsePostgresDSN(opts.DSN); err == nil { // else open fails
		boundStalls(cfg)
		NameConnections(cfg, AppListen)
		d.listenCfg = cfg
	}
	return d
}

func (d *postgresDialect) open(ctx context.Context, opts Options, roundTrips *atomic.Int64) (*sql.DB, *sqlx.DB, error) {
	return openPostgres(ctx, opts, roundTrips)
}

// target is the DSN: a secret, never printed.
func (d *postgresDialect) target() string { return d.dsn }

func (d *postgresDialect) rebind(query string) string { return sqlx.Rebind(sqlx.DOLLAR, query) }

// storedHash: the hash column is text.
func (d *postgresDialect) storedHash(hash string) any { return hash }

// snapshotOptions: REPEATABLE READ is PostgreSQL's snapshot.
func (d *postgresDialect) snapshotOptions() *sql.TxOptions {
	return &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
}

// clockNanos: clock_timestamp, the time as the statement runs (now() is
// the transaction's start), in microseconds, the server's resolution.
func (d *postgresDialect) clockNanos() string {
	return `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000`
}

// retryRead: the pool has dropped a lost connection; one retry takes a
// new one.
func (d *postgresDialect) retryRead(err error) bool { return connectionLost(err) }

func (d *postgresDialect) startListening(s *Store) {
	d.listenOnce.Do(func() { go d.listen(s) })
}

func (d *postgresDialect) stopListening() {
	d.listenOnce.Do(func() { close(d.listenDone) })
	<-d.listenDone
}

// listen wakes s's waiters whenever any process sharing the database
// commits, through LISTEN/NOTIFY, until the store closes. A dropped
// connection is redialed with backoff; every (re)connect wakes the waiters
// too, since notifications sent while disconnected are lost, and waiters
// re-read from their own position.
func (d *postgresDialect) listen(s *Store) {
	defer close(d.listenDone)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.stop
		cancel()
	}()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, d.listenCfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+notifyChannel)
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			s.broadcast()
			for err == nil {
				_, err = conn.WaitForNotification(ctx)
				if err == nil {
					s.broadcast()
				}
			}
		}
		if conn != nil {
			closeCtx, done := context.WithTimeout(context.Background(), time.Second)
			conn.Close(closeCtx)
			done()
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (d *postgresDialect) initWriter(ctx context.Context, w *writerState) error {
	if err := w.connect(ctx); err != nil {
		return err
	}
	return checkTables(ctx, w.conn, `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`, "events", "store_meta", "chain_lock")
}

func (d *postgresDialect) connectErr(err error) error {
	if cfg, perr := ParsePostgresDSN(d.dsn); perr == nil {
		return connectErr(cfg, err)
	}
	return fmt.Errorf("eventlog: open writer connection: %w", err)
}

func (d *postgresDialect) connected(w *writerState) { w.rememberPID() }

// disconnect drops the connection after a failure that may have broken
// it (the server restarted, the network went away); the next write dials
// again and re-reads the chain tail.
func (d *postgresDialect) disconnect(w *writerState) {
	if w.conn == nil {
		return
	}
	for q, st := range w.stmts {
		st.Close()
		delete(w.stmts, q)
	}
	discardConn(w.conn)
	w.conn = nil
	w.forceReload()
}

// dataVersion: a commit of another process shows at begin, in the tail
// read under the chain lock.
func (d *postgresDialect) dataVersion(context.Context, *sql.Conn) (int64, error) { return 0, nil }

func (d *postgresDialect) beginRead() string {
	return `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
}

// begin opens a transaction holding the chain lock (the one row of
// chain_lock, locked FOR UPDATE until commit), so one writer in any
// process appends at a time and seqs are handed out in commit order. The
// tail read after the lock sees the previous holder's commit; if it is not
// the one cached, another process wrote and the caches are reloaded.
// What batch will look up is read with the lock, and its BEGIN goes in
// the lock's pipeline unless it holds AppendTx work.
func (d *postgresDialect) begin(ctx context.Context, w *writerState, batch []*request) error {
	pf := w.prefetchFor(batch)
	if !d.stopHoldingLock && w.mayBeginLate(batch) {
		// Nothing of the transaction is sent now: run queues BEGIN and
		// the lock ahead of the batch's statements, and its seqs are
		// placeholders until the lock's answer (sequencer.go). What the
		// batch looks up and the caches lack is read now, without the
		// lock; a connection idle for long is asked whether it is still
		// there, so that one the server dropped does not carry a COMMIT
		// in its first pipeline. If either fails, the usual way below
		// dials again.
		err := w.prefetch(ctx, pf)
		if err == nil && len(pf.streams) == 0 && len(pf.runs) == 0 && time.Since(w.opt.lastCommit) > lateIdle {
			err = w.conn.PingContext(ctx)
		}
		if err == nil {
			w.opt.open, w.inTx = true, true
			w.lastSeq, w.lastHash = seqPlaceholder, ""
			return nil
		}
		w.disconnect()
	}
	// An idle connection the server dropped (a restart, a failover,
	// pg_terminate_backend) fails its first statement: nothing has been
	// done yet, so dial again and retry once.
	// A batch without AppendTx work sends its BEGIN with the lock and
	// the reads (pipelinedtx.go); the fault hook takes the lock alone.
	pipelined := !needsSQLTx(batch) && !d.stopHoldingLock
	for attempt := 0; !pipelined; attempt++ {
		if err := w.connect(ctx); err != nil {
			return err
		}
		err := w.beginTx(ctx)
		if err == nil {
			break
		}
		w.disconnect()
		if attempt == 1 {
			return storageErr("begin", err)
		}
	}
	if d.stopHoldingLock {
		// The fault needs the lock taken before the tail is read.
		var one int
		if err := w.conn.QueryRowContext(ctx, `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`).Scan(&one); err != nil {
			w.rollback()
			w.disconnect()
			return storageErr("lock the chain", err)
		}
		d.stopHoldingLock = false
		stopUntilContinued()
	}
	// Rows after the cached tail are read too unless the caches are to
	// be reloaded anyway.
	after := w.lastSeq
	if w.dataVersion < 0 || w.s.opts.chainRows {
		after = -1
	}
	var c caughtUp
	var lockErr, err error
	for attempt := 0; ; attempt++ {
		if err := w.connect(ctx); err != nil {
			return err
		}
		var beginErr error
		c, beginErr, lockErr, err = lockAndCatchUp(ctx, w.conn, pipelined, after, pf)
		if beginErr == nil {
			break
		}
		w.disconnect()
		if attempt == 1 {
			return storageErr("begin", beginErr)
		}
		// The connection was replaced: every cache is to be read again.
		after = -1
	}
	if pipelined {
		w.inTx = true
	}
	if lockErr != nil {
		w.rollback()
		w.disconnect()
		return storageErr("lock the chain", lockErr)
	}
	if err != nil {
		w.rollback()
		w.disconnect()
		return storageErr("read chain tail", err)
	}
	current := c.seq == w.lastSeq && hashText(c.hash) == w.lastHash && w.dataVersion >= 0
	if !current && !(after >= 0 && w.catchUp(c)) {
		if err := w.reload(ctx, true); err != nil {
			w.rollback()
			return err
		}
	}
	if c.counter != w.lastSeq {
		// A writer that numbers rows without moving the counter (a rath
		// from before it) would make the next seqs collide.
		w.rollback()
		return storageErr("lock the chain", fmt.Errorf("the chain's counter (chain_lock.seq) is %d but the log ends at seq %d: a writer that does not move it appended (run every process on one rath version)", c.counter, w.lastSeq))
	}
	w.usePrefetched(c)
	return nil
}

// copied sets the chain's counter, the last seq handed out, to the copied
// log's end.
func (d *postgresDialect) copied(tx *Tx, head int64) error {
	if _, err := tx.Exec(`UPDATE chain_lock SET seq = ? WHERE id = 1`, head); err != nil {
		return storageErr("copy: move the chain's counter", err)
	}
	return nil
}

// abortsOnError: a failed statement aborts PostgreSQL's transaction.
func (d *postgresDialect) abortsOnError() bool { return true }

func (d *postgresDialect) readShared(query string) string { return query + ` FOR SHARE` }

func (d *postgresDialect) batchesRows() bool { return true }

func (d *postgresDialect) seesOtherCommits() bool { return false }

func (d *postgresDialect) keysOutsideWriter() bool { return true }

// absorb: another process may hold the chain lock for a while, and what
// this one queued meanwhile joins the batch that waited (absorb.go).
func (d *postgresDialect) absorb(w *writerState, local []*request) []*request {
	return w.absorb(local)
}

// beforeCommit signals the commit to every listening process (NOTIFY is
// delivered at commit, and only if it commits), unless the flush sent it,
// and refuses to commit a transaction a failed statement left aborted:
// PostgreSQL would roll it back while reporting success.
func (d *postgresDialect) beforeCommit(ctx context.Context, w *writerState) error {
	if pgTxFailed(w.conn) {
		return storageErr("commit", errors.New("a statement in the transaction failed; rolled back"))
	}
	if !w.batched() && w.lastSeq > w.origin {
		// Rows written one by one (the old chain rows) move the chain's
		// counter here; a batch's statement moves it (pgbatch.go).
		if err := w.exec(ctx, `UPDATE chain_lock SET seq = ? WHERE id = 1`, w.lastSeq); err != nil {
			return storageErr("move the chain's counter", err)
		}
	}
	if !w.notified {
		if err := w.exec(ctx, `NOTIFY `+notifyChannel); err != nil {
			return storageErr("notify", err)
		}
	}
	return nil
}

// storeTree sends the batch's pending rows with the tree (pgbatch.go);
// a store writing the old chain rows, one by one, stores the tree's last
// rows and its head in one statement.
func (d *postgresDialect) storeTree(ctx context.Context, w *writerState, ids []int64, rows [][]byte, head string, commit bool) error {
	if w.batched() {
		return w.flushPostgres(ctx, commit) // (no tree: it is built after the commit)
	}
	return w.insertTreeHead(ctx, ids, rows, head, true)
}
