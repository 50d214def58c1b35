package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A COMMIT whose answer is lost (the connection failed after the pipeline
// holding it was sent) may or may not have committed. Reported as such,
// an unknown outcome is a transient error its caller retries: a fleet
// worker then gives the run up and runs it again, and a tool call whose
// result had landed runs twice. The writer can learn the outcome
// instead. The batch's first event has a leaf hash no other event can
// have (it commits to a random salt), and its seq is known: once the old
// connection's server process has ended, its transaction is over, and the
// row at that seq holds that hash if and only if the batch committed. So
// the writer ends the old process (pg_terminate_backend: one still
// waiting for the rest of its pipeline, or for a half-open connection,
// would otherwise hold the chain lock until the server's idle timeout),
// waits for it to be gone from pg_stat_activity (a process leaves it only
// after its transaction was ended and its locks released), and reads the
// row. A batch that landed is answered as committed; one that did not is
// written again. If the outcome cannot be learned within the busy timeout
// (the server is down, the role may not end the process), the error
// stands, as before.

// lostCommit is what the writer knows of a pipeline holding a COMMIT
// whose answer did not come back.
type lostCommit struct {
	pid  uint32 // the server process of the connection it was sent on
	seq  int64  // the batch's first event's seq, 0 if it had none
	hash string // and its leaf hash, as stored
}

// markLost records that the open batch's COMMIT was sent and its answer
// lost (err, not an answer the server sent).
func (w *writerState) markLost(err error) {
	var pe *pgconn.PgError
	if err == nil || errors.As(err, &pe) || !w.batched() || len(w.pend.seq) == 0 {
		return
	}
	w.lost = &lostCommit{pid: w.pid, seq: w.pend.seq[0], hash: w.pend.hash[0]}
}

// resolveLost learns whether the batch of l committed, on a new
// connection.
func (w *writerState) resolveLost(l *lostCommit) (landed bool, err error) {
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
			return false, err
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
			return false, fmt.Errorf("end the old connection's process %d: %w", l.pid, err)
		}
		if alive == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("the old connection's process %d did not end: %w", l.pid, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	var hash string
	err = w.conn.QueryRowContext(ctx, `SELECT hash FROM events WHERE seq = $1`, l.seq).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		w.disconnect()
		return false, fmt.Errorf("read seq %d: %w", l.seq, err)
	}
	return hash == l.hash, nil
}

// rememberPID records the server process of the writer's new connection.
func (w *writerState) rememberPID() {
	w.pid = 0
	withPgx(w.conn, func(c *pgx.Conn) error {
		w.pid = c.PgConn().PID()
		return nil
	})
}
