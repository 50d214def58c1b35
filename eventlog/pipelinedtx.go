package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A PostgreSQL group commit's transaction costs two round trips of its
// own when it is begun and committed through database/sql: the BEGIN and
// the COMMIT, each waiting for its answer. A batch that hands no AppendTx
// function a *sql.Tx needs neither: its BEGIN is the first statement of
// the pipeline that takes the chain lock and reads the tail
// (lockAndCatchUp; a BEGIN in a pipeline opens a transaction block that
// outlasts the pipeline), and its COMMIT follows the statement that
// writes the batch's rows (flushAndCommit). A transaction
// thus costs what its statements do: the lock's pipeline, the
// projections' statements, and the rows with the commit.
//
// The server runs a pipeline's statements in order and skips the rest
// after one fails, so a COMMIT queued behind a failed insert never runs:
// the transaction is left aborted and open, and the writer rolls it back
// as after any failed statement.

// needsSQLTx reports whether a batch must begin its transaction through
// database/sql: an AppendTx function is handed the *sql.Tx.
func needsSQLTx(batch []*request) bool {
	for _, r := range batch {
		if r.txFn != nil {
			return true
		}
	}
	return false
}

// sendFlush runs, in one round trip, the projectors' queued statements
// not sent yet (Tx.ExecPipelined), pgBatchInsert with args and, with commit, COMMIT. A
// failed statement stops the rest. With commit the transaction has ended
// when the insert ran (txEnded): the COMMIT ran after it, and committed
// or, failing, rolled back. missed reports a queued statement of a late
// transaction's own (its BEGIN, its lock) that failed (sequencer.go):
// nothing of the batch ran, and queuedErr says why.
func (w *writerState) sendFlush(ctx context.Context, commit bool, args ...any) (missed bool, queuedErr, insertErr, commitErr error) {
	failedAt := -1
	sent, rolledBack := false, false
	err := withPgx(w.conn, func(conn *pgx.Conn) error {
		b, queued := w.queuedBatch()
		b.Queue(pgBatchInsert, args...)
		if commit {
			b.Queue(`COMMIT`)
		}
		br := conn.SendBatch(ctx, b)
		first := w.pend.sent
		w.pend.sent, sent = len(w.pend.queued), true
		for i := range queued {
			if queuedErr = readQueued(br, queued[i]); queuedErr != nil {
				failedAt = first + i
				br.Close()
				return nil
			}
		}
		if _, insertErr = br.Exec(); insertErr == nil && commit {
			w.txEnded = true
			var tag pgconn.CommandTag
			if tag, commitErr = br.Exec(); commitErr == nil && tag.String() != "COMMIT" {
				// A transaction already failed answers COMMIT with
				// ROLLBACK: pgTxFailed's case, found afterwards.
				commitErr, rolledBack = fmt.Errorf("the transaction was rolled back (%s)", tag), true
			}
		}
		if err := br.Close(); err != nil && insertErr == nil && commitErr == nil {
			if commit {
				commitErr = err
			} else {
				insertErr = err
			}
		}
		return nil
	})
	if err != nil && queuedErr == nil && insertErr == nil {
		if w.lateUnsent() {
			// The connection could not be had: nothing was sent.
			return true, err, nil, nil
		}
		insertErr = err
	}
	if queuedErr != nil && w.missedAt(failedAt, queuedErr, commit) {
		return true, queuedErr, nil, nil
	}
	var pe *pgconn.PgError
	if commit && queuedErr != nil && !errors.As(queuedErr, &pe) {
		// Not a statement the server refused, which would have aborted
		// the transaction, but an answer that did not come back: the
		// COMMIT behind it may have run. Redoing the batch could write
		// it twice, so the outcome is reported unknown, as for a lost
		// COMMIT, until the writer learns it (resolve.go).
		queuedErr, commitErr = nil, queuedErr
	}
	if commit && sent && !rolledBack {
		// An answer that did not come back after the COMMIT was sent
		// (markLost ignores the server's own errors).
		lost := insertErr
		if lost == nil {
			lost = commitErr
		}
		w.markLost(lost)
	}
	return false, queuedErr, insertErr, commitErr
}
