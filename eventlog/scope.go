package eventlog

import (
	"context"
	"database/sql"

	"github.com/gorath/rath/events"
)

// Scope is what an append is made for, stated by its caller: the run its
// events belong to, the lease that fences them and the carried write
// that rides on it. The log reads none of them from the context, so a
// call site shows what stamps and fences its append. The zero Scope is an
// append of no run, unfenced, carrying nothing.
type Scope struct {
	// Run stamps every event of the append with Run.ID (none if empty)
	// and, with a key-encryption key, seals them under the run's key.
	// The log ignores Run.Seed; package session derives ids from it.
	Run events.RunRef
	// Lease, if set, fences the append (see [Lease]).
	Lease *Lease
	// Carry, if set, is written by the append ahead of its own writes
	// unless an earlier append wrote it (see [Carried]).
	Carry *Carried
}

// Appender appends to a store in one [Scope]. The zero Appender is not
// usable; get one from [Store.In]. It is a small value: copy it freely.
type Appender struct {
	s  *Store
	sc Scope
}

// In returns an appender whose appends are made in sc.
func (s *Store) In(sc Scope) Appender { return Appender{s: s, sc: sc} }

// Store returns the store a appends to.
func (a Appender) Store() *Store { return a.s }

// Scope returns what a's appends are made for.
func (a Appender) Scope() Scope { return a.sc }

// Append is [Store.Append] in a's scope.
func (a Appender) Append(ctx context.Context, stream string, expected int64, evs ...events.Payload) ([]events.Event, error) {
	return a.s.appendWrites(ctx, a.sc, nil, []Write{{Stream: stream, Expected: expected, Events: evs}})
}

// AppendWrites is [Store.AppendWrites] in a's scope.
func (a Appender) AppendWrites(ctx context.Context, writes ...Write) ([]events.Event, error) {
	return a.s.appendWrites(ctx, a.sc, nil, writes)
}

// AppendTx is [Store.AppendTx] in a's scope.
func (a Appender) AppendTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, writes ...Write) ([]events.Event, error) {
	return a.s.appendWrites(ctx, a.sc, fn, writes)
}
