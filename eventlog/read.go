package eventlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gorath/rath/events"
	"iter"
	"slices"
	"strings"
	"time"
)

// Query selects events. Zero fields do not filter.
type Query struct {
	Stream  string
	RunID   string
	Types   []string
	FromSeq int64 // first seq, inclusive
	ToSeq   int64 // last seq, inclusive; 0 means the head
	Limit   int   // 0 means no limit
}

// Head is the last event of the log: its seq and hash. Kept elsewhere, it
// lets Verify detect truncation.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

func (h Head) String() string { return fmt.Sprintf("%d:%s", h.Seq, h.Hash) }

// ParseHead parses "SEQ:HASH".
func ParseHead(s string) (Head, error) {
	seqText, hash, ok := strings.Cut(strings.TrimSpace(s), ":")
	var h Head
	if !ok || hash == "" {
		return h, fmt.Errorf("eventlog: head %q: want SEQ:HASH", s)
	}
	if _, err := fmt.Sscanf(seqText, "%d", &h.Seq); err != nil || h.Seq <= 0 {
		return h, fmt.Errorf("eventlog: head %q: seq must be a positive integer", s)
	}
	h.Hash = hash
	return h, nil
}

const scanPage = 2000

// subscribeOutage is how long a subscriber on PostgreSQL waits for a
// lost server to come back before it yields the error.
const subscribeOutage = 5 * time.Minute

type row struct {
	Seq         int64          `db:"seq"`
	Stream      string         `db:"stream"`
	Version     int64          `db:"version"`
	Type        string         `db:"type"`
	TypeVersion int            `db:"type_version"`
	RunID       sql.NullString `db:"run_id"`
	Payload     string         `db:"payload"`
	At          int64          `db:"at"`
	Hash        string         `db:"hash"`
}

const selectEvents = `SELECT seq, stream, version, type, type_version, run_id, payload, at, hash FROM events`

func (q Query) where(after int64) (string, []any) {
	conds := []string{"seq > ?"}
	args := []any{after}
	if q.ToSeq > 0 {
		conds = append(conds, "seq <= ?")
		args = append(args, q.ToSeq)
	}
	if q.Stream != "" {
		conds = append(conds, "stream = ?")
		args = append(args, q.Stream)
	}
	if q.RunID != "" {
		conds = append(conds, "run_id = ?")
		args = append(args, q.RunID)
	}
	if len(q.Types) > 0 {
		conds = append(conds, "type IN (?"+strings.Repeat(",?", len(q.Types)-1)+")")
		for _, t := range q.Types {
			args = append(args, t)
		}
		if !slices.Contains(q.Types, events.TypeChunkAppended) {
			// The type index leaves chunk.appended out; the planner uses
			// it only when the query says so in the same words.
			conds = append(conds, "type <> '"+events.TypeChunkAppended+"'")
		}
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// rows reads one page of stored rows after seq `after`.
func (s *Store) rows(ctx context.Context, q Query, after int64, limit int) ([]row, error) {
	read := func() ([]row, error) { return s.scanRows(ctx, s.rdb, q, after, limit) }
	if _, ok := s.d.(*postgresDialect); ok {
		read = func() ([]row, error) { return s.scanRowsPgx(ctx, q, after, limit) }
	}
	rs, err := read()
	if s.d.retryRead(err) && ctx.Err() == nil {
		// The pool has dropped the dead connection: one retry on a new one.
		rs, err = read()
	}
	return rs, err
}

// scanRows reads one page of stored rows after seq `after` through db.
func (s *Store) scanRows(ctx context.Context, db queryer, q Query, after int64, limit int) ([]row, error) {
	where, args := q.where(after)
	args = append(args, limit)
	rs, err := db.QueryContext(ctx, s.rebind(selectEvents+where+" ORDER BY seq LIMIT ?"), args...)
	if err != nil {
		return nil, fmt.Errorf("eventlog: read: %w", err)
	}
	defer rs.Close()
	out := make([]row, 0, min(limit, scanPage))
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &r.RunID, &r.Payload, &r.At, &r.Hash); err != nil {
			return nil, fmt.Errorf("eventlog: read: %w", err)
		}
		r.Hash = hashText(r.Hash)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: read: %w", err)
	}
	return out, nil
}

// Scan yields the events matching q in seq order, reading in pages so no
// read transaction is held for long (pages.go).
func (s *Store) Scan(ctx context.Context, q Query) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		for p := range s.pages(ctx, q) {
			for _, ev := range p.evs {
				if !yield(ev, nil) {
					return
				}
			}
			if p.err != nil {
				yield(events.Event{}, p.err)
				return
			}
		}
	}
}

// Read returns the events matching q.
func (s *Store) Read(ctx context.Context, q Query) ([]events.Event, error) {
	var out []events.Event
	for ev, err := range s.Scan(ctx, q) {
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// ReadStream returns a stream's events with version >= fromVersion.
func (s *Store) ReadStream(ctx context.Context, stream string, fromVersion int64) ([]events.Event, error) {
	return s.readStream(ctx, stream, ` WHERE stream = ? AND version >= ? ORDER BY version`, stream, fromVersion)
}

// ReadStreams returns the events of several streams in one read, each
// stream's in version order; a stream without events has none in the
// map. It costs one round trip where a ReadStream a stream costs one
// each.
func (s *Store) ReadStreams(ctx context.Context, streams ...string) (map[string][]events.Event, error) {
	out := make(map[string][]events.Event, len(streams))
	if len(streams) == 0 {
		return out, nil
	}
	args := make([]any, len(streams))
	for i, st := range streams {
		args[i] = st
	}
	evs, err := s.readStream(ctx, strings.Join(streams, ", "),
		` WHERE stream IN (?`+strings.Repeat(", ?", len(streams)-1)+`) ORDER BY stream, version`, args...)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		out[ev.Stream] = append(out[ev.Stream], ev)
	}
	return out, nil
}

// ReadStreamUntil returns up to limit events of a stream with version >=
// fromVersion and seq <= toSeq, in version order. It walks the stream's
// (stream, version) index, so its cost is bounded by limit, not by the
// stream's length or the rest of the log.
func (s *Store) ReadStreamUntil(ctx context.Context, stream string, fromVersion, toSeq int64, limit int) ([]events.Event, error) {
	return s.readStream(ctx, stream, ` WHERE stream = ? AND version >= ? AND version < ? AND seq <= ? ORDER BY version`,
		stream, fromVersion, fromVersion+int64(limit), toSeq)
}

func (s *Store) readStream(ctx context.Context, stream, where string, args ...any) ([]events.Event, error) {
	var rs []row
	if err := s.q.SelectContext(ctx, &rs, s.rebind(selectEvents+where), args...); err != nil {
		return nil, fmt.Errorf("eventlog: read stream %q: %w", stream, err)
	}
	out := make([]events.Event, 0, len(rs))
	for _, r := range rs {
		ev, err := s.toEvent(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// ReadRun returns the events produced by a run, in seq order.
func (s *Store) ReadRun(ctx context.Context, runID string) ([]events.Event, error) {
	return s.Read(ctx, Query{RunID: runID})
}

// Get returns the event at seq, or ErrNotFound.
func (s *Store) Get(ctx context.Context, seq int64) (events.Event, error) {
	var r row
	err := s.q.GetContext(ctx, &r, s.rebind(selectEvents+` WHERE seq = ?`), seq)
	if errors.Is(err, sql.ErrNoRows) {
		return events.Event{}, fmt.Errorf("%w: seq %d", ErrNotFound, seq)
	}
	if err != nil {
		return events.Event{}, fmt.Errorf("eventlog: get %d: %w", seq, err)
	}
	return s.toEvent(ctx, r)
}

// Head returns the last event's seq and hash (zero for an empty log).
func (s *Store) Head(ctx context.Context) (Head, error) {
	var h Head
	err := s.rdb.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&h.Seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return Head{}, nil
	}
	h.Hash = hashText(h.Hash)
	if err != nil {
		return Head{}, fmt.Errorf("eventlog: head: %w", err)
	}
	return h, nil
}

// StreamVersion returns the stream's current version (0 if it has no events).
func (s *Store) StreamVersion(ctx context.Context, stream string) (int64, error) {
	var v int64
	if err := s.rdb.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = ?`), stream).Scan(&v); err != nil {
		return 0, fmt.Errorf("eventlog: stream version: %w", err)
	}
	return v, nil
}

// rawBlob returns a blob as stored: sealed, if it was.
func (s *Store) rawBlob(ctx context.Context, hash string) ([]byte, error) {
	var b []byte
	err := s.rdb.QueryRowContext(ctx, s.rebind(`SELECT bytes FROM blobs WHERE hash = ?`), hash).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrBlobNotFound, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: get blob: %w", err)
	}
	return b, nil
}

// Subscribe yields the events matching q from q.FromSeq on, then waits for
// new ones until ctx is done. It never blocks the writer: it wakes on
// Notify and re-reads from its own position.
func (s *Store) Subscribe(ctx context.Context, q Query) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		next := q.FromSeq
		var lostSince time.Time
		for {
			wake := s.Notify()
			sub := q
			sub.FromSeq = next
			lost := false
			for ev, err := range s.Scan(ctx, sub) {
				if err != nil && s.d.retryRead(err) && ctx.Err() == nil &&
					(lostSince.IsZero() || time.Since(lostSince) < subscribeOutage) {
					// The server went away: wait for it and read on from
					// the last event yielded.
					if lostSince.IsZero() {
						lostSince = time.Now()
					}
					lost = true
					break
				}
				if err != nil {
					if ctx.Err() == nil {
						yield(events.Event{}, err)
					}
					return
				}
				lostSince = time.Time{}
				if !yield(ev, nil) {
					return
				}
				next = ev.Seq + 1
			}
			if !lost {
				lostSince = time.Time{}
			}
			retry := time.Second
			if lost {
				retry = 200 * time.Millisecond
				wake = nil // poll until the server answers again
			}
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case <-wake:
			case <-time.After(retry):
				// Another process may have appended; poll now and then.
			}
		}
	}
}

type blobPointer struct {
	Blob string `json:"$blob"`
	Size int    `json:"size"`
}

// blobPrefix starts a payload kept in blobs (events.ExpandStored knows it
// too).
var blobPrefix = []byte(`{"$blob":"`)

// StoredInBlob reports whether a payload as stored in the events table is
// a stand-in for a large payload kept in blobs, and the blob's hash. A
// reader of raw rows fetches the payload from blobs then (Store.Read does).
func StoredInBlob(stored []byte) (hash string, ok bool, err error) {
	if !bytes.HasPrefix(stored, blobPrefix) {
		return "", false, nil
	}
	var bp blobPointer
	if err := json.Unmarshal(stored, &bp); err != nil {
		return "", true, fmt.Errorf("eventlog: bad blob reference: %w", err)
	}
	return bp.Blob, true, nil
}

func (s *Store) toEvent(ctx context.Context, r row) (events.Event, error) {
	return s.toEventWith(ctx, r, nil)
}

// toEventWith is toEvent with the blobs read already (pageBlobs); a blob
// not among them is read on its own.
func (s *Store) toEventWith(ctx context.Context, r row, blobs map[string][]byte) (events.Event, error) {
	ev := events.Event{Seq: r.Seq, Stream: r.Stream, Version: r.Version, Type: r.Type, TypeVersion: r.TypeVersion,
		RunID: r.RunID.String, Payload: json.RawMessage(r.Payload), At: time.Unix(0, r.At).UTC(), Hash: hashText(r.Hash)}
	if hash, ok, err := StoredInBlob(ev.Payload); ok {
		if err != nil {
			return events.Event{}, fmt.Errorf("eventlog: seq %d: %w", r.Seq, err)
		}
		b, ok := blobs[hash]
		if !ok {
			b, err = s.rawBlob(ctx, hash)
		}
		if err != nil {
			return events.Event{}, fmt.Errorf("eventlog: seq %d payload: %w", r.Seq, err)
		}
		ev.Payload = b
	} else {
		ev.Payload = events.ExpandStored(r.Stream, r.Type, ev.Payload)
		ev.Redacted = isRedacted(r.Payload)
	}
	pt, erased, under, err := s.openPayload(ctx, r.Seq, r.Stream, r.Type, ev.Payload)
	if err != nil {
		return events.Event{}, err
	}
	ev.Payload, ev.SealedUnder = pt, under
	if erased {
		ev.Redacted = true
	}
	return ev, nil
}
