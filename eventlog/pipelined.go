package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// A projector's statement whose answer it does not need costs a round trip
// on PostgreSQL when it runs at once: the writer waits for the server
// before it goes on, holding the chain lock. Tx.ExecPipelined queues it
// instead, and the writer sends it ahead of the transaction's next
// statement, in that statement's round trip, or ahead of the batch's rows
// at the flush. So every later statement of the transaction sees its
// effect, as if it had run at once. The session row a request moves (its
// length, its token totals) was about one round trip in three of a fleet's
// commit.
//
// A queued statement that fails cannot be traced to its request where it
// fails (it may be sent with another request's statement): the batch is
// rolled back and written again with every statement run where it is
// queued (queueOff), where a failure is its request's alone. A statement
// whose request must fail when it changes no row (a session row that is
// not there, or holds another length) is queued so that the server fails
// it then (ExecPipelinedRequiringRow).

// errQueuedFailed marks a queued statement that failed.
var errQueuedFailed = errors.New("eventlog: a projector's queued statement failed")

// ExecPipelined runs a statement whose answer the caller does not need:
// on PostgreSQL, while a group commit applies its requests, it is queued
// and sent with the transaction's next statement or the batch's rows;
// elsewhere, and in Exclusive, it runs at once. Its error does not come
// back here: if it fails, the whole batch is written again with every
// such statement run at once, so that the failure is its own request's.
func (t *Tx) ExecPipelined(query string, args ...any) error {
	if !t.w.queueing() {
		_, err := t.Exec(query, args...)
		return err
	}
	t.w.pend.queued = append(t.w.pend.queued, queuedStmt{query: t.w.pipelinedText(query, false), args: args})
	return nil
}

// ExecPipelinedRequiringRow is ExecPipelined for an UPDATE (or INSERT,
// without a RETURNING clause of its own) whose request must fail if it
// changes no row. Queued, it reports queued, and a batch in which it
// changed no row is written again with it run at once; run at once, it
// returns its result for the caller to judge.
func (t *Tx) ExecPipelinedRequiringRow(query string, args ...any) (queued bool, res sql.Result, err error) {
	if !t.w.queueing() {
		res, err = t.Exec(query, args...)
		return false, res, err
	}
	t.w.pend.queued = append(t.w.pend.queued, queuedStmt{query: t.w.pipelinedText(query, true), args: args})
	return true, nil, nil
}

// queueing reports whether Tx.ExecPipelined queues its statement: on
// PostgreSQL, while a group commit applies its requests (not in the redo
// of a batch with a savepoint a request, nor of one whose queued
// statement failed).
func (w *writerState) queueing() bool {
	return w.inBatch && w.batched() && !w.queueOff && !w.savepoints
}

// pipelinedText is query as queued: PostgreSQL's placeholders and, when a
// row is required, wrapped so that changing none fails (a division by the
// count of rows changed: a value the server computes as it runs, which no
// planning can fold early).
func (w *writerState) pipelinedText(query string, requireRow bool) string {
	key := pipelinedKey{query, requireRow}
	if q, ok := w.pipelined[key]; ok {
		return q
	}
	q := w.s.rebind(query)
	if requireRow {
		q = `WITH changed AS (` + q + ` RETURNING 1) SELECT 1 / count(*)::int FROM changed`
	}
	if w.pipelined == nil || len(w.pipelined) >= maxHeadCache {
		w.pipelined = map[pipelinedKey]string{}
	}
	w.pipelined[key] = q
	return q
}

type pipelinedKey struct {
	query      string
	requireRow bool
}

// unsent reports how many queued statements have not been sent yet.
func (p *pgPending) unsent() int { return len(p.queued) - p.sent }

// execAfterQueued runs query after the queued statements, in one round
// trip. A queued statement's failure is errQueuedFailed (and recorded in
// pend.failed, for run to redo the batch); query's own is its caller's.
func (w *writerState) execAfterQueued(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var tag pgconn.CommandTag
	err := w.afterQueued(ctx, query, args, func(br pgx.BatchResults) (err error) {
		tag, err = br.Exec()
		return err
	})
	if err != nil {
		return nil, err
	}
	return tagResult(tag), nil
}

// queryRowAfterQueued runs a query of at most one row after the queued
// statements, in one round trip where sending them first and then the
// query took two, and scans its row into dest: no row is sql.ErrNoRows,
// as database/sql says it.
func (w *writerState) queryRowAfterQueued(ctx context.Context, query string, args []any, dest ...any) error {
	err := w.afterQueued(ctx, query, args, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(dest...)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

// afterQueued sends the queued statements and, unless query is "",
// query, in one pipeline, and has read read query's answer.
func (w *writerState) afterQueued(ctx context.Context, query string, args []any, read func(pgx.BatchResults) error) error {
	var queuedErr, err error
	rerr := withPgx(w.conn, func(conn *pgx.Conn) error {
		b, queued := w.queuedBatch()
		if query != "" {
			q, a := w.renderSeqs(w.s.rebind(query), args)
			b.Queue(q, a...)
		}
		br := conn.SendBatch(ctx, b)
		sent := w.pend.sent
		w.pend.sent = len(w.pend.queued)
		for i := range queued {
			if queuedErr = readQueued(br, queued[i]); queuedErr != nil {
				w.pend.failedAt = sent + i
				br.Close()
				return nil
			}
		}
		if query != "" {
			err = read(br)
		}
		if cerr := br.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return nil
	})
	if queuedErr == nil && rerr != nil {
		queuedErr, w.pend.failedAt = rerr, w.pend.sent
	}
	if queuedErr != nil {
		w.pend.failed = queuedErr
		return fmt.Errorf("%w: %w", errQueuedFailed, queuedErr)
	}
	return err
}

// sendQueued sends the queued statements now, before a statement whose
// answer is read through database/sql (a query, an AppendTx function).
func (w *writerState) sendQueued(ctx context.Context) error {
	if w.pend.unsent() == 0 {
		return nil
	}
	_, err := w.execAfterQueued(ctx, "")
	return err
}

// queuedBatch starts a pipeline with the queued statements not sent yet,
// their placeholder seqs rendered (sequencer.go), and returns them.
func (w *writerState) queuedBatch() (*pgx.Batch, []queuedStmt) {
	b := &pgx.Batch{}
	queued := w.pend.queued[w.pend.sent:]
	for _, d := range queued {
		q, args := w.renderSeqs(d.query, d.args)
		b.Queue(q, args...)
	}
	return b, queued
}

// readQueued reads the answer of a queued statement: the lock's gives the
// transaction's base seq.
func readQueued(br pgx.BatchResults, d queuedStmt) error {
	if d.base == nil {
		_, err := br.Exec()
		return err
	}
	var setting string
	if err := br.QueryRow().Scan(d.base, &setting); err != nil {
		return err
	}
	*d.known = true
	return nil
}

// withPgx runs f on the pgx connection under a database/sql one (the
// writer's), for a pipeline.
func withPgx(conn *sql.Conn, f func(*pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("eventlog: the writer's connection is a %T, not pgx's", dc)
		}
		return f(sc.Conn())
	})
}

// tagResult is a pgx command tag as database/sql's result.
type tagResult pgconn.CommandTag

func (r tagResult) LastInsertId() (int64, error) {
	return 0, errors.New("eventlog: LastInsertId is not supported by PostgreSQL")
}

func (r tagResult) RowsAffected() (int64, error) { return pgconn.CommandTag(r).RowsAffected(), nil }
