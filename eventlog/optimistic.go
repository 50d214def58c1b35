package eventlog

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Optimistic transactions on PostgreSQL. A group commit costs two round
// trips: the pipeline that begins, takes the chain lock and reads the
// tail, then the one with the rows and the COMMIT. The first is there so
// that the writer learns of other processes' commits before it checks
// versions against its caches. When this writer made the log's last
// commit, which one busy writer nearly always did, that read finds
// nothing new, and the batch could have been checked against the caches
// without it.
//
// So when the previous commit found the tail where this writer left it,
// the next one does not ask: it applies its batch against the caches and
// queues BEGIN, the lock and a check that the tail is still the cached
// one ahead of the batch's first statement (pipelined.go), in the same
// round trip as the rows and the COMMIT when the batch needs nothing
// from the server on the way. The server runs them in order: the lock is
// granted (after any other holder's commit), then the check fails the
// transaction if anyone else committed since, and the statements behind
// it, the COMMIT included, are skipped. Nothing is written then; the
// batch is rolled back in the writer and done again the usual way, which
// folds the other commits into the caches (a miss: one round trip and
// the batch's work in the process wasted). A refusal the caches decided
// (a version conflict, a fenced lease) is returned only once the check
// has passed.
//
// A transaction is begun optimistically only after the usual way found
// the tail current in a row as many times as the last misses ask (once
// to begin with, twice as often after each miss, half after each
// optimistic commit), so writers that take turns, whose commits rarely
// follow their own, do not keep wasting their batches. (A miss also costs
// a preparation of its statements again: pgx forgets those of a failed
// pipeline.) A connection idle for longer than optimisticIdle is not
// trusted with it either: a connection the server dropped (a restart)
// fails its first statement, and the usual way retries that on a new
// connection knowing nothing ran. On an optimistic transaction's
// connection, an error before BEGIN's answer that the server sent
// (PostgreSQL ends a session with a FATAL message) or that pgx reports
// safe to retry (nothing was sent) is a miss too, on a new connection;
// an answer that does not come back at all is a lost COMMIT, whose
// outcome the writer learns (resolve.go).

// optimisticStatements are the statements an optimistic transaction
// queues ahead of its batch's own: BEGIN, the lock and the tail check.
const optimisticStatements = 3

// optimisticIdle is the longest a connection may have been idle for a
// transaction to begin on it optimistically.
const optimisticIdle = time.Second

// maxOptimisticNeed bounds the current tails in a row an optimistic
// transaction waits for after misses.
const maxOptimisticNeed = 64

// tailCheck fails, dividing by zero, unless the log's last row is the one
// the writer cached.
const tailCheck = `SELECT 1 / count(*)::int FROM (SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1) AS t WHERE seq = $1 AND hash = $2`

// missError is an optimistic transaction whose check found another
// commit (or whose connection was gone before it began): nothing was
// written, and the batch is done again the usual way. cause is the
// server's answer, or the connection's failure.
type missError struct{ cause error }

func (e *missError) Error() string {
	return "eventlog: an optimistic transaction missed (another process committed, or the connection was gone): " + e.cause.Error()
}

func (e *missError) Unwrap() error { return e.cause }

// optimism is the writer's state for optimistic transactions.
type optimism struct {
	// streak counts the transactions in a row that found the tail this
	// writer had cached, or committed optimistically; need is how many
	// an optimistic one waits for.
	streak, need int
	// lastCommit is when the writer's connection last committed.
	lastCommit time.Time
	// open is set while the open transaction is optimistic: its first
	// optimisticStatements queued statements are BEGIN, the lock and the
	// check.
	open bool
	// missed is set by a run whose optimistic transaction missed, for
	// commit to do the batch again without a reload.
	missed bool
}

// mayBeginOptimistically reports whether batch may be written in an
// optimistic transaction: the caches are trusted and complete for it (pf,
// what it would read first, is empty), nothing in it must run in a
// transaction begun through database/sql, and it is not redone one
// statement at a time.
func (w *writerState) mayBeginOptimistically(batch []*request, pf prefetch) bool {
	o := &w.opt
	if o.streak < max(o.need, 1) || w.conn == nil || len(batch) == 0 || !w.batched() ||
		w.queueOff || w.savepoints ||
		needsSQLTx(batch) ||
		w.dataVersion < 0 || w.lastSeq == 0 || w.keyErr != nil ||
		w.fingerprint == "" || w.merkleFrom == 0 || w.v2From == 0 ||
		!w.lateTree() && w.lastSeq != w.treeSize+int64(len(w.leaves)) ||
		time.Since(o.lastCommit) > optimisticIdle {
		return false
	}
	return len(pf.streams) == 0 && len(pf.runs) == 0
}

// queueOptimisticBegin queues BEGIN, the lock and the tail check ahead of
// everything the batch queues.
func (w *writerState) queueOptimisticBegin() {
	w.pend.queued = append(w.pend.queued,
		queuedStmt{query: `BEGIN`},
		queuedStmt{query: `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`},
		queuedStmt{query: tailCheck, args: []any{w.lastSeq, w.lastHash}})
}

// optimisticUnsent reports whether the open transaction is optimistic and
// nothing of it has reached the server: there is nothing to roll back.
func (w *writerState) optimisticUnsent() bool { return w.opt.open && w.pend.sent == 0 }

// missedAt reports whether the queued statement that failed at index i
// with err, in a pipeline that also held the COMMIT when commit is set,
// was one of the optimistic transaction's own, so that nothing of the
// batch ran.
func (w *writerState) missedAt(i int, err error, commit bool) bool {
	if !w.opt.open || i >= optimisticStatements {
		return false
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		// The server refused it: it ran nothing after it, and a session
		// it ended (FATAL) ran nothing at all.
		return true
	case i == 0 && pgconn.SafeToRetry(err):
		return true // never sent
	default:
		// No answer: with the COMMIT in the pipeline, it may have run.
		return !commit
	}
}

// missed records an optimistic transaction that missed: the transaction is
// rolled back, the caches are put back as they were before the batch,
// and the next commits go the usual way. A connection that failed is
// replaced (which reloads the caches).
func (w *writerState) missed(start undo, connFailed bool) {
	// The lease tokens cached stay: those cached before were current at
	// this writer's last commit, and the next begin drops those another
	// process's commits changed; those read in the batch were read after
	// the check passed; and one this batch's events changed was dropped
	// when they were applied.
	leases := w.leases
	w.leases = nil
	w.rollback()
	w.restore(start)
	w.leases = leases
	w.nextFront, w.nextHead = nil, TreeHead{}
	if connFailed {
		w.disconnect()
	}
	o := &w.opt
	o.streak, o.missed = 0, true
	o.need = min(2*max(o.need, 1), maxOptimisticNeed)
	w.s.missed.Add(1)
}

// beganUsually records what a transaction begun the usual way found: the
// tail this writer cached (current), or another process's commit.
func (w *writerState) beganUsually(current bool) {
	if current {
		w.opt.streak++
	} else {
		w.opt.streak = 0
	}
}

// committedOptimistically records an optimistic transaction that
// committed.
func (w *writerState) committedOptimistically() {
	o := &w.opt
	o.streak++
	o.need /= 2
	w.s.optimistic.Add(1)
}

// connFailed reports whether err means the connection is gone (no answer
// the server sent).
func connFailed(err error) bool {
	var pe *pgconn.PgError
	return !errors.As(err, &pe) || pe.Severity == "FATAL" || pe.Severity == "PANIC"
}
