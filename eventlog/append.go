package eventlog

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"time"

	"github.com/gorath/rath/events"
)

// Append appends events to one stream. expected is the version the stream
// must be at (NoStream for a new stream, AnyVersion to skip the check).
// It returns the stored events once they are durable. Errors: a
// *ConflictError (matching ErrConflict), ErrInvalid for a payload that fails
// validation, ErrClosed, a projector's error, or the context's error (in
// which case the events may or may not have been written).
//
// The append is of no run and unfenced: an append for a run, under its
// lease, is made through [Store.In].
func (s *Store) Append(ctx context.Context, stream string, expected int64, evs ...events.Payload) ([]events.Event, error) {
	return s.appendWrites(ctx, Scope{}, nil, []Write{{Stream: stream, Expected: expected, Events: evs}})
}

// AppendWrites appends to several streams atomically: all writes commit or
// none does.
func (s *Store) AppendWrites(ctx context.Context, writes ...Write) ([]events.Event, error) {
	return s.appendWrites(ctx, Scope{}, nil, writes)
}

func (s *Store) appendWrites(ctx context.Context, sc Scope, txFn func(context.Context, *sql.Tx) error, writes []Write) ([]events.Event, error) {
	cs, done, err := carriedFrom(ctx, sc.Carry)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return s.appendNow(ctx, sc, txFn, writes)
	}
	out, pos, ok := withCarried(cs, writes)
	if !ok {
		// The carried writes go first, each on its own (two of them may
		// name one stream), and the caller's append after them.
		var err error
		for _, c := range cs {
			if err != nil {
				settle([]*Carried{c}, errNotSent)
				continue
			}
			_, err = s.appendNow(ctx, sc, nil, []Write{c.w})
			settle([]*Carried{c}, err)
		}
		if err != nil {
			return nil, err
		}
		return s.appendNow(ctx, sc, txFn, writes)
	}
	stored, err := s.appendNow(ctx, sc, txFn, out)
	done(err)
	if err != nil {
		return nil, err
	}
	return ownEvents(stored, pos)
}

// appendNow sends one request of writes to the writer and waits for it.
// sc.Carry is not read: appendWrites sent what it carries.
func (s *Store) appendNow(ctx context.Context, sc Scope, txFn func(context.Context, *sql.Tx) error, writes []Write) ([]events.Event, error) {
	req := &request{ctx: ctx, reply: make(chan result, 1), txFn: txFn, runID: sc.Run.ID, arriving: true}
	s.inflight.Add(1)
	defer func() {
		if req.arriving { // it never reached send
			s.inflight.Add(-1)
		}
	}()
	if sc.Lease != nil {
		l := *sc.Lease // the caller's may change after the call
		req.lease = &l
	}
	for _, w := range writes {
		if w.Stream == "" {
			return nil, invalid("append: empty stream")
		}
		if w.Expected < AnyVersion {
			return nil, invalid("append: expected version %d", w.Expected)
		}
		pw := pendingWrite{stream: w.Stream, expected: w.Expected, blobs: w.Blobs, items: make([]item, 0, len(w.Events))}
		for _, p := range w.Events {
			it, err := prepare(w.Stream, p)
			if err != nil {
				return nil, err
			}
			pw.items = append(pw.items, it)
		}
		req.n += len(pw.items)
		req.writes = append(req.writes, pw)
	}
	found, err := s.redactRequest(req)
	if err != nil {
		return nil, err
	}
	stored, err := s.sendSealed(ctx, req)
	if err == nil {
		s.recordRedactions(ctx, req, stored, found)
	}
	return stored, err
}

// AppendTx is AppendWrites with more work in the same transaction: fn
// runs after the events are written (and projected), on the writer's
// transaction, and everything commits together or not at all. fn must
// not commit or roll back tx, and must not touch the events or blobs
// tables. A job queue sharing the database uses it to enqueue a job
// exactly when its event is appended. fn's error fails the append.
func (s *Store) AppendTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, writes ...Write) ([]events.Event, error) {
	return s.appendWrites(ctx, Scope{}, fn, writes)
}

func prepare(stream string, p events.Payload) (item, error) {
	if p == nil {
		return item{}, invalid("append: nil payload")
	}
	typ := p.EventType()
	if typ == "" {
		return item{}, invalid("append: payload %T has an empty type", p)
	}
	if sp, ok := p.(events.StreamPayload); ok && sp.StreamID() != stream {
		return item{}, invalid("append: %s for stream %q appended to stream %q", typ, sp.StreamID(), stream)
	}
	if v, ok := p.(events.Validator); ok {
		if err := v.Validate(); err != nil {
			return item{}, fmt.Errorf("append %s: %w", typ, err)
		}
	}
	raw, err := events.Canonical(p)
	if err != nil {
		return item{}, fmt.Errorf("append %s: %w", typ, err)
	}
	return item{typ: typ, version: p.EventVersion(), payload: raw, p: asPointer(p)}, nil
}

// asPointer returns p as a pointer to its struct, so projectors see one
// shape whether the caller appended a value or a pointer (Decode returns
// pointers too).
func asPointer(p events.Payload) events.Payload {
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer {
		return p
	}
	ptr := reflect.New(v.Type())
	ptr.Elem().Set(v)
	if q, ok := ptr.Interface().(events.Payload); ok {
		return q
	}
	return p
}

// PutBlob stores b content-addressed and returns its hash. Storing the same
// bytes twice stores them once. With a Redactor, what is stored (and
// hashed) is b with its secrets removed.
func (s *Store) PutBlob(ctx context.Context, b []byte) (string, error) {
	req := &request{ctx: ctx, reply: make(chan result, 1), writes: []pendingWrite{{blobs: [][]byte{b}}}}
	found, err := s.redactRequest(req)
	if err != nil {
		return "", err
	}
	if _, err := s.sendSealed(ctx, req); err != nil {
		return "", err
	}
	s.recordRedactions(ctx, req, nil, found)
	return BlobHash(req.writes[0].blobs[0]), nil
}

// Exclusive runs fn on the writer goroutine in a transaction of its own,
// with no appends interleaved, and commits if fn returns nil. Rebuilds use
// it. Events must not be inserted through tx.
func (s *Store) Exclusive(ctx context.Context, fn func(context.Context, *Tx) error) error {
	req := &request{ctx: ctx, reply: make(chan result, 1), fn: fn}
	_, err := s.send(ctx, req)
	return err
}

func (s *Store) send(ctx context.Context, req *request) ([]events.Event, error) {
	select {
	case <-s.stop:
		return nil, ErrClosed
	default:
	}
	if req.arriving {
		req.arriving = false
	} else {
		s.inflight.Add(1)
	}
	defer s.inflight.Add(-1)
	select {
	case s.reqs <- req:
	case <-s.stop:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-req.reply:
		return res.events, res.err
	case <-s.done:
		// The writer stopped; it answers every request it took before
		// stopping, so a reply may still be waiting.
		select {
		case res := <-req.reply:
			return res.events, res.err
		default:
			return nil, ErrClosed
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lingerMax caps how long the writer lingers for more requests.
const (
	lingerMax = 300 * time.Microsecond
)
