package projections

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Chunks returns the first n chunks of a session, walking the base chain
// of structurally shared prefixes.
func (r *Reader) Chunks(ctx context.Context, id string, n int64) ([]StoredChunk, error) {
	return r.ChunkRange(ctx, id, 0, n)
}

// ChunkRange returns chunks [from, to) of a session. A session's own
// chunks are read from the log, in the events of its stream that carry
// them: they are stored once, in their events. Chunks below the session's
// base_len come from its base, and so on down the chain.
func (r *Reader) ChunkRange(ctx context.Context, id string, from, to int64) ([]StoredChunk, error) {
	type span struct {
		session string
		baseLen int64
		lo, hi  int64
	}
	var spans []span
	cur, hi := id, to
	for hi > from {
		var baseLen int64
		var base sql.NullString
		err := r.q.QueryRowContext(ctx, r.db.Rebind(`SELECT base_len, base FROM sessions WHERE id = ?`), cur).Scan(&baseLen, &base)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: session %q", ErrNotFound, cur)
		}
		if err != nil {
			return nil, fmt.Errorf("projections: chunks of %q: %w", id, err)
		}
		if hi > baseLen {
			spans = append(spans, span{cur, baseLen, max(from, baseLen), hi})
			hi = baseLen
		}
		if !base.Valid {
			break
		}
		cur = base.String
	}
	// Pieces of the spans, oldest first; a long range is read in pieces
	// that start at snapshots, side by side on the read pool's
	// connections (decoding is most of the cost).
	total := max(to-from, 0)
	workers := int64(min(runtime.GOMAXPROCS(0), parallelReads))
	size := max(parallelPiece, (total+workers-1)/max(workers, 1))
	var pieces []span
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		for lo := sp.lo; lo < sp.hi; lo += size {
			pieces = append(pieces, span{sp.session, sp.baseLen, lo, min(lo+size, sp.hi)})
		}
	}
	parts := make([][]StoredChunk, len(pieces))
	errs := make([]error, len(pieces))
	read := func(i int) {
		p := pieces[i]
		parts[i], errs[i] = r.ownChunks(ctx, make([]StoredChunk, 0, p.hi-p.lo), p.session, p.baseLen, p.lo, p.hi)
	}
	switch len(pieces) {
	case 0:
		return []StoredChunk{}, nil
	case 1:
		read(0)
	default:
		var wg sync.WaitGroup
		sem := make(chan struct{}, workers)
		for i := range pieces {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				read(i)
			})
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("projections: chunks of %q: %w", id, err)
	}
	out := parts[0]
	if len(parts) > 1 {
		out = make([]StoredChunk, 0, total)
		for _, p := range parts {
			out = append(out, p...)
		}
	}
	if int64(len(out)) != total {
		return nil, fmt.Errorf("%w: session %q should have chunks %d..%d, found %d", ErrInconsistent, id, from, to, len(out))
	}
	return out, nil
}

// chunkTypes are the events that carry a session's own chunks, on its
// stream: its creation event (its first chunks) and chunk.appended.
const chunkTypes = `'` + events.TypeSessionCreated + `','` + events.TypeSessionMerged + `','` + events.TypeSessionCompressed + `','` + events.TypeChunkAppended + `'`

// chunkEventsPage is how many events ownChunks reads per query.
const chunkEventsPage = 512

// A range of more than parallelPiece chunks is read in up to
// parallelReads pieces at once (no more than GOMAXPROCS).
const (
	parallelPiece = 2048
	parallelReads = 4
)

// ownChunks appends chunks [lo, hi) that session physically holds (lo >=
// baseLen) to out. It starts from the latest snapshot before chunk lo, so
// a range near the end reads few events.
func (r *Reader) ownChunks(ctx context.Context, out []StoredChunk, session string, baseLen, lo, hi int64) ([]StoredChunk, error) {
	var after int64 // the stream version after which the next chunk lies
	pos := baseLen  // the index of the next chunk the stream's events hold
	if lo > baseLen {
		err := r.q.QueryRowContext(ctx, r.db.Rebind(`SELECT version, length FROM session_snapshots WHERE session = ? AND length <= ? ORDER BY seq DESC LIMIT 1`), session, lo).Scan(&after, &pos)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return out, err
		}
	}
	cr := chunkReader{session: session, lo: lo, hi: hi, next: lo, pos: pos, out: out}
	if r.opener != nil {
		cr.open = func(seq int64, typ string, payload []byte) ([]byte, bool, error) {
			return r.opener.OpenStored(ctx, seq, session, typ, payload)
		}
	}
	cr.ownCreated = func() (int64, error) {
		// The event that started the session was redacted: it held the
		// chunks that the chunk.appended events on its stream do not.
		var length, appended int64
		if err := r.q.QueryRowContext(ctx, r.db.Rebind(`SELECT length FROM sessions WHERE id = ?`), session).Scan(&length); err != nil {
			return 0, err
		}
		err := r.q.QueryRowContext(ctx, r.db.Rebind(`SELECT COUNT(*) FROM events WHERE stream = ? AND type = ?`), session, events.TypeChunkAppended).Scan(&appended)
		return length - baseLen - appended, err
	}
	for cr.next < hi {
		// At most SnapshotEvery events lie between the snapshot and chunk
		// lo; past it, each chunk.appended carries one chunk.
		last, blob, n, err := r.scanChunkEvents(ctx, &cr, after, min(chunkEventsPage, hi-cr.next+SnapshotEvery))
		if err != nil {
			return cr.out, err
		}
		if blob.hash != "" {
			// A payload kept in blobs, read with no cursor open (a second
			// connection from the pool).
			var payload []byte
			if err := r.db.QueryRowContext(ctx, r.db.Rebind(`SELECT bytes FROM blobs WHERE hash = ?`), blob.hash).Scan(&payload); err != nil {
				return cr.out, fmt.Errorf("event seq %d: payload blob %s: %w", blob.seq, blob.hash, err)
			}
			if err := cr.event(blob.seq, blob.typ, blob.typeVersion, payload, false); err != nil {
				return cr.out, err
			}
			last = blob.version
		} else if n == 0 {
			break
		}
		after = last
	}
	return cr.out, nil
}

// blobEvent is a chunk event whose payload is kept in blobs.
type blobEvent struct {
	seq, version int64
	typ          string
	typeVersion  int
	hash         string
}

// scanChunkEvents decodes the next page of a stream's chunk events after
// version `after` into cr, in the cursor, and stops early at an event
// whose payload is kept in blobs, which it returns for the caller to read.
// last is the version of the last event decoded; n how many rows it read.
func (r *Reader) scanChunkEvents(ctx context.Context, cr *chunkReader, after, limit int64) (last int64, blob blobEvent, n int, err error) {
	rows, err := r.q.QueryContext(ctx, r.db.Rebind(`SELECT seq, version, type, type_version, `+r.payloadBytes()+` FROM events
		WHERE stream = ? AND version > ? AND type IN (`+chunkTypes+`) ORDER BY version LIMIT ?`), cr.session, after, limit)
	if err != nil {
		return 0, blob, 0, err
	}
	defer rows.Close()
	var payload sql.RawBytes
	var ev blobEvent
	for cr.next < cr.hi && rows.Next() {
		n++
		if err := rows.Scan(&ev.seq, &ev.version, &ev.typ, &ev.typeVersion, &payload); err != nil {
			return last, blob, n, err
		}
		if hash, ok, err := eventlog.StoredInBlob(payload); ok {
			if err != nil {
				return last, blob, n, fmt.Errorf("event seq %d: %w", ev.seq, err)
			}
			ev.hash = hash
			return last, ev, n, nil
		}
		if err := cr.event(ev.seq, ev.typ, ev.typeVersion, payload, true); err != nil {
			return last, blob, n, err
		}
		last = ev.version
	}
	return last, blob, n, rows.Err()
}

// payloadBytes selects the payload column as bytes on SQLite: its driver
// then hands over one copy of the row's bytes, where a TEXT column is
// copied into a string and again into the caller's buffer.
func (r *Reader) payloadBytes() string {
	if r.db.DriverName() == "sqlite" {
		return `CAST(payload AS BLOB)`
	}
	return `payload`
}

// holdsChunks are the types whose events carry a session's chunks.
var holdsChunks = map[string]bool{events.TypeChunkAppended: true, events.TypeSessionCreated: true, events.TypeSessionCompressed: true, events.TypeSessionMerged: true}

// chunkReader collects chunks [lo, hi) of a session from its events.
type chunkReader struct {
	session      string
	lo, hi, next int64 // next: the index of the next chunk to collect
	pos          int64 // the index of the next chunk in the stream's events
	out          []StoredChunk
	// ownCreated counts the chunks of the session's first event when it
	// was redacted (a query, made only then).
	ownCreated func() (int64, error)
	// open opens a sealed payload (Reader.WithOpener); nil leaves it
	// sealed, and it does not decode.
	open func(seq int64, typ string, payload []byte) ([]byte, bool, error)
}

// event takes the chunks of one event: its payload as its row stores it,
// or (stored false) as kept in blobs. A redacted event's chunks are
// events.RedactedChunk: the session keeps its length and every session
// sharing the prefix reads the same stand-ins (eventlog/shape.go).
func (cr *chunkReader) event(seq int64, typ string, typeVersion int, payload []byte, stored bool) error {
	standIn := events.RedactedChunk
	if cr.open != nil && bytes.HasPrefix(payload, []byte(events.SealedPrefix)) {
		pt, erased, err := cr.open(seq, typ, payload)
		if err != nil {
			return err
		}
		// An erased subject's chunks read as redacted ones do, as
		// events.ErasedChunk: the session keeps its length.
		payload, stored = pt, false
		if erased {
			payload, standIn = []byte(events.RedactedMarker), events.ErasedChunk
		}
	}
	if events.IsRedactedPayload(payload) {
		var n int64
		switch typ {
		case events.TypeChunkAppended:
			n = 1
		case events.TypeSessionCreated, events.TypeSessionMerged, events.TypeSessionCompressed:
			var err error
			if n, err = cr.ownCreated(); err != nil {
				return fmt.Errorf("event seq %d: %w", seq, err)
			}
		}
		first := cr.pos
		for i := range n {
			if cr.next >= cr.hi {
				break
			}
			if err := cr.put(seq, first+i, standIn(seq)); err != nil {
				return err
			}
		}
		cr.pos = first + n
		return nil
	}
	if typ == events.TypeChunkAppended {
		var ca events.ChunkAppended
		var err error
		if stored {
			ca, err = events.DecodeStoredChunkAppended(cr.session, payload, typeVersion)
		} else {
			ca, err = events.DecodeChunkAppended(payload, typeVersion)
		}
		if err != nil {
			return fmt.Errorf("event seq %d: %w", seq, err)
		}
		return cr.put(seq, ca.Index, ca.Chunk)
	}
	if stored {
		payload = events.ExpandStored(cr.session, typ, payload)
	}
	p, err := events.Decode(typ, typeVersion, payload)
	if errors.Is(err, events.ErrRedacted) && !holdsChunks[typ] {
		return nil // a redacted tool result, say: no chunk was in it
	}
	if err != nil {
		return fmt.Errorf("event seq %d: %w", seq, err)
	}
	var first int64
	var chunks []events.Chunk
	switch e := p.(type) {
	case *events.SessionCreated:
		chunks = e.Chunks
	case *events.SessionCompressed:
		chunks = e.Chunks
	case *events.SessionMerged:
		first, chunks = e.Parents[0].Len, e.Chunks
	}
	for i := range chunks {
		if cr.next >= cr.hi {
			break
		}
		if err := cr.put(seq, first+int64(i), chunks[i]); err != nil {
			return err
		}
	}
	return nil
}

func (cr *chunkReader) put(seq, idx int64, c events.Chunk) error {
	cr.pos = idx + 1
	switch {
	case idx < cr.next:
		if idx >= cr.lo {
			return inconsistent("event seq %d holds chunk %d of session %q again", seq, idx, cr.session)
		}
		return nil
	case idx > cr.next:
		return inconsistent("session %q misses chunk %d (event seq %d holds chunk %d)", cr.session, cr.next, seq, idx)
	case idx >= cr.hi:
		return nil
	}
	cr.out = append(cr.out, StoredChunk{Chunk: c, Home: cr.session, Index: idx})
	cr.next++
	return nil
}
