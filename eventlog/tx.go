package eventlog

import (
	"context"
	"database/sql"

	"github.com/gorath/rath/keyring"
)

// Tx is the writer's open transaction, handed to projectors. Statements
// are prepared once per query text and reused.
type Tx struct {
	ctx  context.Context
	w    *writerState
	vals map[any]any // projectors' state for the request (Value)
	// sealing is the event being projected by an append and the key its
	// payload was sealed under (nil: in clear), as SealingKey returns it. Outside
	// an append (a rebuild) Store.SealedKey finds it.
	sealing struct {
		seq int64
		key *keyring.DataKey
	}
}

// Value returns what a projector stored under key during the request being
// written, or nil: a RequestProjector keeps its held-back writes here.
func (t *Tx) Value(key any) any { return t.vals[key] }

// SetValue stores v under key for the rest of the request.
func (t *Tx) SetValue(key, v any) {
	if t.vals == nil {
		t.vals = map[any]any{}
	}
	t.vals[key] = v
}

// Exec runs a statement in the transaction.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	if t.w.pend.unsent() > 0 {
		return t.w.execAfterQueued(t.ctx, query, args...)
	}
	if hasPlaceholder(args) {
		// A transaction sequenced at its end, whose lock was sent: the
		// server renders the seqs (sequencer.go).
		q, a := t.w.renderSeqs(t.w.s.rebind(query), args)
		return t.w.conn.ExecContext(t.ctx, q, a...)
	}
	st, err := t.w.stmt(t.ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.ctx, args...)
}

// QueryRow runs a query that returns at most one row; its Scan reads it.
func (t *Tx) QueryRow(query string, args ...any) *Row {
	if hasPlaceholder(args) && t.w.pend.unsent() == 0 {
		q, a := t.w.renderSeqs(t.w.s.rebind(query), args)
		return &Row{row: t.w.conn.QueryRowContext(t.ctx, q, a...)}
	}
	if t.w.pend.unsent() > 0 && !t.w.readsUnlocked(args) {
		// The queued statements go first and the query with them, in
		// one round trip (sent when Scan learns where the row goes). A
		// queued statement that fails leaves the transaction aborted,
		// so the query fails too; the writer then redoes the batch
		// (pend.failed).
		return &Row{scan: func(dest ...any) error {
			return t.w.queryRowAfterQueued(t.ctx, query, args, dest...)
		}}
	}
	// (A prepare error surfaces through Scan.)
	return &Row{row: t.sqlRow(query, args...)}
}

// sqlRow is QueryRow as database/sql answers it, for the keyring, which
// writes in Exclusive (where nothing is queued) through a *sql.Row.
func (t *Tx) sqlRow(query string, args ...any) *sql.Row {
	if !t.w.readsUnlocked(args) {
		t.w.sendQueued(t.ctx)
	}
	st, err := t.w.stmt(t.ctx, query)
	if err != nil {
		return t.w.conn.QueryRowContext(t.ctx, t.w.s.rebind(query), args...)
	}
	return st.QueryRowContext(t.ctx, args...)
}

// Row is the answer of Tx.QueryRow, as database/sql's *sql.Row: no row
// is sql.ErrNoRows from Scan.
type Row struct {
	row  *sql.Row
	scan func(dest ...any) error
}

// Scan copies the row's columns into dest.
func (r *Row) Scan(dest ...any) error {
	if r.scan != nil {
		return r.scan(dest...)
	}
	return r.row.Scan(dest...)
}

// Query runs a query in the transaction.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	if !t.w.readsUnlocked(args) {
		if err := t.w.sendQueued(t.ctx); err != nil {
			return nil, err
		}
	}
	if hasPlaceholder(args) {
		q, a := t.w.renderSeqs(t.w.s.rebind(query), args)
		return t.w.conn.QueryContext(t.ctx, q, a...)
	}
	st, err := t.w.stmt(t.ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(t.ctx, args...)
}
