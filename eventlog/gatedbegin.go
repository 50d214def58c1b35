package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// gatePatience is how long a SQLite writer competes for the write lock
// in SQLite's busy handler before it closes the write gate behind it.
const gatePatience = 50 * time.Millisecond

// gateClosedPoll bounds each wait for the lock of a writer that closed the gate.
const gateClosedPoll = 5 * time.Millisecond

// beginGated begins the writer's transaction on a SQLite file.
//
// Writers compete for SQLite's write lock directly, as SQLite's busy
// handler lets them: a writer that wins a run of commits keeps its caches
// and SQLite's page cache warm, which keeps the median append fast. They
// only pass through the write gate on their way, which costs two
// syscalls while it is open. A writer that has waited gatePatience closes
// the gate: it holds it until it has the lock, so writers arriving meanwhile
// wait in the kernel, and only those already past the gate go first, one
// transaction each. That bounds a writer's wait, which the busy handler
// alone does not (writegate_unix.go says why).
func (w *writerState) beginGated() (*sql.Tx, error) {
	deadline := time.Now().Add(w.s.opts.BusyTimeout)
	closed := false
	defer func() {
		if closed {
			w.gate.release()
		}
	}()
	for {
		if !closed {
			if err := w.gate.pass(time.Until(deadline)); err != nil {
				return nil, gateErr(err)
			}
		}
		// Behind a closed gate the lock is soon free: short waits, as
		// the busy handler's sleeps grow to 100 ms with a long one, and
		// the lock would sit idle while everyone else waits at the gate.
		patience := gatePatience
		if closed {
			patience = gateClosedPoll
		}
		tx, err := w.beginWithin(min(patience, time.Until(deadline)))
		if err == nil || !errors.Is(err, errLockWait) || !time.Now().Before(deadline) {
			return tx, err
		}
		if !closed {
			if err := w.gate.acquire(time.Until(deadline)); err != nil {
				return nil, gateErr(err)
			}
			closed = true
		}
	}
}

// errLockWait is a begin that waited its patience for SQLite's lock.
var errLockWait = errors.New("eventlog: SQLite's write lock stayed taken")

// beginWithin begins an IMMEDIATE transaction, waiting at most d for
// SQLite's write lock. The driver ends a lock wait when the call's context
// ends, but database/sql also rolls a transaction back when its context
// ends: so the context is one that ends only if the wait outlasts d.
func (w *writerState) beginWithin(d time.Duration) (*sql.Tx, error) {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(max(d, time.Millisecond), cancel)
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil && sqliteInTransaction(err) {
		// A BEGIN that an earlier timeout cut short may have begun
		// after all, its failure reported for the context instead:
		// nothing of that transaction was written or acknowledged.
		w.conn.ExecContext(context.Background(), `ROLLBACK`)
		tx, err = w.conn.BeginTx(ctx, nil)
	}
	if !timer.Stop() {
		// The wait outlasted d (the context ended, or is about to and
		// would roll back the transaction begun just in time).
		if err == nil {
			tx.Rollback()
		} else {
			// The driver may report the context's end for a BEGIN
			// that ran: end what it may have begun (a no-op error
			// if it did not), or the next BEGIN finds it open.
			w.conn.ExecContext(context.Background(), `ROLLBACK`)
		}
		if err == nil || ctx.Err() != nil || sqliteCode(err) == sqliteBusy {
			return nil, &StorageError{Op: "begin", Kind: ErrBusy, Err: errLockWait}
		}
		return nil, err
	}
	if err != nil && sqliteCode(err) == sqliteBusy {
		return nil, &StorageError{Op: "begin", Kind: ErrBusy, Err: errors.Join(errLockWait, err)}
	}
	return tx, err
}

// gateErr types a write gate's timeout as the busy error it is.
func gateErr(err error) error {
	if errors.Is(err, errGateTimeout) {
		return &StorageError{Op: "begin", Kind: ErrBusy, Err: err}
	}
	return err
}

// sqliteInTransaction reports SQLite's refusal to BEGIN on a connection
// whose transaction is still open.
func sqliteInTransaction(err error) bool {
	return strings.Contains(err.Error(), "cannot start a transaction within a transaction")
}
