package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A COMMIT whose answer is lost (the connection failed after the pipeline
// holding it was sent) may or may not have committed. Reported as such,
// an unknown outcome is a transient error its caller retries: a fleet
// worker then gives the run up and runs it again, and a tool call whose
// result had landed runs twice. The writer can learn the outcome
// instead. The batch's first event has a salt no other event has (a
// random one): once the old connection's server process has ended, its
// transaction is over, and a row with that salt at the event's stream and
// version exists if and only if the batch committed. So
// the writer ends the old process (pg_terminate_backend: one still
// waiting for the rest of its pipeline, or for a half-open connection,
// would otherwise hold the chain lock until the server's idle timeout),
// waits for it to be gone from pg_stat_activity (a process leaves it only
// after its transaction was ended and its locks released), and reads the
// row. The batch's first event is looked up by its stream, version and
// salt, which a transaction sequenced at its end knows before its seq
// (sequencer.go). A batch that landed is answered as committed; one that
// did not is written again. If the outcome cannot be learned within the busy timeout
// (the server is down, the role may not end the process), the error
// stands, as before.

// lostCommit is what the writer knows of a pipeline holding a COMMIT
// whose answer did not come back.
type lostCommit struct {
	pid uint32 // the server process of the connection it was sent on
	// The batch's first event: its stream, version, salt, and offset
	// from the transaction's base (pgPending).
	stream  string
	version int64
	salt    []byte
	offset  int64
	// The batch's leaf lines, for a late transaction's seqs and hashes
	// once its base is learned.
	prefix, suffix [][]byte
}

// markLost records that the open batch's COMMIT was sent and its answer
// lost (err, not an answer the server sent).
func (w *writerState) markLost(err error) {
	var pe *pgconn.PgError
	if err == nil || errors.As(err, &pe) || !w.batched() || len(w.pend.seq) == 0 {
		return
	}
	p := &w.pend
	w.lost = &lostCommit{pid: w.pid, stream: p.stream[0], version: p.version[0], salt: p.salt[0], offset: p.seq[0],
		prefix: slices.Clone(p.prefix), suffix: slices.Clone(p.suffix)}
}

// resolveLost learns whether the batch of l committed, on a new
// connection, and if it did the seq its first event has.
func (w *writerState) resolveLost(l *lostCommit) (landed bool, seq int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.s.opts.BusyTimeout)
	defer cancel()
	// A server that restarted is waited for, up to the busy timeout.
	for {
		w.disconnect()
		err := w.connect(ctx)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return false, 0, err
		case <-time.After(20 * time.Millisecond):
		}
	}
	for {
		var alive int
		// Only a process of this database and role. After a restart the
		// pid could be another's of them: ending it costs that client an
		// error, never data (a rare case, as the kernel hands pids out in
		// turn).
		err := w.conn.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = $1 AND datname = current_database() AND usename = current_user`, int64(l.pid)).Scan(&alive)
		if err != nil {
			w.disconnect()
			return false, 0, fmt.Errorf("end the old connection's process %d: %w", l.pid, err)
		}
		if alive == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return false, 0, fmt.Errorf("the old connection's process %d did not end: %w", l.pid, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	err = w.conn.QueryRowContext(ctx, `SELECT seq FROM events WHERE stream = $1 AND version = $2 AND salt = $3`, l.stream, l.version, l.salt).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	if err != nil {
		w.disconnect()
		return false, 0, fmt.Errorf("read %s version %d: %w", l.stream, l.version, err)
	}
	return true, seq, nil
}

// rememberPID records the server process of the writer's new connection.
func (w *writerState) rememberPID() {
	w.pid = 0
	withPgx(w.conn, func(c *pgx.Conn) error {
		w.pid = c.PgConn().PID()
		return nil
	})
}
