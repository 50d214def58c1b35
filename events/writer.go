package events

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// maxHeadCache bounds the cached stream heads; the cache is cleared when
// it grows past this.
const maxHeadCache = 1 << 16

// writerState is owned by the writer goroutine (and by Open before the
// goroutine starts); nothing else touches it.
type writerState struct {
	s           *Store
	conn        *sql.Conn
	stmts       map[string]*sql.Stmt
	hasher      *chainHasher
	lastSeq     int64
	lastHash    string
	heads       map[string]int64
	dataVersion int64
}

// Tx is the writer's open transaction, handed to projectors. Statements
// are prepared once per query text and reused.
type Tx struct {
	ctx context.Context
	w   *writerState
}

// Exec runs a statement in the transaction.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	st, err := t.w.stmt(t.ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.ctx, args...)
}

// QueryRow runs a query that returns at most one row.
func (t *Tx) QueryRow(query string, args ...any) *sql.Row {
	st, err := t.w.stmt(t.ctx, query)
	if err != nil {
		// Surface the prepare error through Scan.
		return t.w.conn.QueryRowContext(t.ctx, query, args...)
	}
	return st.QueryRowContext(t.ctx, args...)
}

// Query runs a query in the transaction.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	st, err := t.w.stmt(t.ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(t.ctx, args...)
}

func (w *writerState) init(ctx context.Context, s *Store) error {
	w.s = s
	w.stmts = map[string]*sql.Stmt{}
	w.hasher = newChainHasher(s.opts.HMACKey)
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("events: open writer connection: %w", err)
	}
	w.conn = conn
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='events'`).Scan(&n); err != nil {
		return fmt.Errorf("events: open: %w", err)
	}
	if n == 0 {
		return errors.New("events: open: no events table (run the migrations first)")
	}
	return w.reload(ctx)
}

func (w *writerState) closeStmts() {
	for _, st := range w.stmts {
		st.Close()
	}
	if w.conn != nil {
		w.conn.Close()
	}
}

// reload reads the chain tail and forgets cached stream heads; needed when
// another connection may have written.
func (w *writerState) reload(ctx context.Context) error {
	w.heads = map[string]int64{}
	err := w.conn.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&w.lastSeq, &w.lastHash)
	if errors.Is(err, sql.ErrNoRows) {
		w.lastSeq, w.lastHash = 0, ""
		err = nil
	}
	if err != nil {
		return fmt.Errorf("events: read chain tail: %w", err)
	}
	return w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&w.dataVersion)
}

func (w *writerState) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("events: prepare: %w", err)
	}
	w.stmts[query] = st
	return st, nil
}

func (w *writerState) exec(ctx context.Context, query string, args ...any) error {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// begin opens an IMMEDIATE transaction (taking SQLite's write lock up
// front, so no read-to-write upgrade can fail with SQLITE_BUSY) and
// refreshes caches if another connection committed since our last look.
func (w *writerState) begin(ctx context.Context) error {
	if _, err := w.conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("events: begin: %w", err)
	}
	if w.s.opts.InMemory && w.dataVersion >= 0 {
		return nil // only this process can write an in-memory database
	}
	var dv int64
	if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
		w.rollback()
		return fmt.Errorf("events: data_version: %w", err)
	}
	if dv != w.dataVersion {
		if err := w.reload(ctx); err != nil {
			w.rollback()
			return err
		}
	}
	return nil
}

func (w *writerState) rollback() {
	// The writer's lifetime context: rollback must run even if the request
	// context is done.
	w.conn.ExecContext(context.Background(), `ROLLBACK`)
}

func (w *writerState) head(ctx context.Context, stream string) (int64, error) {
	if v, ok := w.heads[stream]; ok {
		return v, nil
	}
	var v int64
	st, err := w.stmt(ctx, `SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = ?`)
	if err != nil {
		return 0, err
	}
	if err := st.QueryRowContext(ctx, stream).Scan(&v); err != nil {
		return 0, fmt.Errorf("events: stream head: %w", err)
	}
	if len(w.heads) >= maxHeadCache {
		w.heads = map[string]int64{}
	}
	w.heads[stream] = v
	return v, nil
}

type undo struct {
	lastSeq  int64
	lastHash string
	heads    map[string]int64 // previous value, -1 for "not cached"
}

// commit writes a batch of requests in one transaction. The fast path
// runs them back to back; if one fails after it may have written (a
// projector refusing an event, a failed insert), the transaction is rolled
// back and the batch is redone with a savepoint around each request, so
// one bad request never takes its batch-mates down. Version conflicts are
// detected before a request writes anything and need no rollback.
func (w *writerState) commit(batch []*request) {
	results, ok, dirty := w.run(batch, false)
	if dirty {
		results, ok, _ = w.run(batch, true)
	}
	if ok == 0 {
		w.replyAll(batch, results)
		return
	}
	if _, err := w.conn.ExecContext(context.Background(), `COMMIT`); err != nil {
		w.rollback()
		err = fmt.Errorf("events: commit: %w", err)
		for i := range results {
			if results[i].err == nil {
				results[i] = result{err: err}
			}
		}
		w.forceReload()
		w.replyAll(batch, results)
		return
	}
	w.replyAll(batch, results)
	w.s.broadcast()
}

// forceReload makes the next begin re-read the chain tail and forget the
// cached heads, after a failure left the in-memory state uncertain.
func (w *writerState) forceReload() {
	w.dataVersion = -1
	w.heads = map[string]int64{}
}

// run applies the batch inside a new transaction. It returns the results,
// how many requests succeeded, and whether the batch must be redone with
// savepoints (the transaction was then rolled back). When no request
// succeeded the transaction is rolled back too.
func (w *writerState) run(batch []*request, savepoints bool) ([]result, int, bool) {
	ctx := context.Background()
	results := make([]result, len(batch))
	if err := w.begin(ctx); err != nil {
		for i := range results {
			results[i].err = err
		}
		return results, 0, false
	}
	start := undo{lastSeq: w.lastSeq, lastHash: w.lastHash, heads: map[string]int64{}}
	ok := 0
	for i, req := range batch {
		if req.ctx.Err() != nil {
			// The caller gave up before we started; do not write.
			results[i].err = req.ctx.Err()
			continue
		}
		u := undo{lastSeq: w.lastSeq, lastHash: w.lastHash, heads: map[string]int64{}}
		if savepoints {
			if err := w.exec(ctx, `SAVEPOINT req`); err != nil {
				results[i].err = fmt.Errorf("events: savepoint: %w", err)
				continue
			}
		}
		evs, wrote, err := w.apply(ctx, req, &u)
		for k, v := range u.heads {
			if _, seen := start.heads[k]; !seen {
				start.heads[k] = v
			}
		}
		if err != nil {
			w.restore(u)
			if wrote && !savepoints {
				w.rollback()
				w.restore(start)
				return nil, 0, true
			}
			if savepoints {
				w.exec(ctx, `ROLLBACK TO req`)
				w.exec(ctx, `RELEASE req`)
			}
			results[i].err = err
			continue
		}
		if savepoints {
			if err := w.exec(ctx, `RELEASE req`); err != nil {
				w.rollback()
				w.forceReload()
				for j := range results {
					results[j] = result{err: fmt.Errorf("events: release: %w", err)}
				}
				return results, 0, false
			}
		}
		results[i].events = evs
		ok++
	}
	if ok == 0 {
		w.rollback()
	}
	return results, ok, false
}

func (w *writerState) restore(u undo) {
	w.lastSeq, w.lastHash = u.lastSeq, u.lastHash
	for k, v := range u.heads {
		if v < 0 {
			delete(w.heads, k)
		} else {
			w.heads[k] = v
		}
	}
}

func (w *writerState) replyAll(batch []*request, results []result) {
	for i, req := range batch {
		req.reply <- results[i]
	}
}

const insertEvent = `INSERT INTO events (seq, stream, version, type, type_version, run_id, payload, at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// apply writes one request. wrote reports whether it may have written
// anything before failing.
func (w *writerState) apply(ctx context.Context, req *request, u *undo) (evs []Event, wrote bool, err error) {
	// Check every expected version first, so a conflict writes nothing.
	heads := make([]int64, len(req.writes))
	for i, pw := range req.writes {
		if len(pw.items) == 0 {
			continue
		}
		for j := range i {
			if req.writes[j].stream == pw.stream && len(req.writes[j].items) > 0 {
				return nil, false, invalid("append: stream %q named twice in one atomic write", pw.stream)
			}
		}
		head, err := w.head(ctx, pw.stream)
		if err != nil {
			return nil, false, err
		}
		if pw.expected != AnyVersion && pw.expected != head {
			return nil, false, &ConflictError{Stream: pw.stream, Expected: pw.expected, Actual: head}
		}
		heads[i] = head
	}
	out := make([]Event, 0, req.n)
	tx := &Tx{ctx: ctx, w: w}
	for i, pw := range req.writes {
		for _, b := range pw.blobs {
			if w.s.opts.DiscardBlobs {
				break
			}
			wrote = true
			if err := w.putBlob(ctx, b); err != nil {
				return nil, wrote, err
			}
		}
		if len(pw.items) == 0 {
			continue
		}
		head := heads[i]
		if _, seen := u.heads[pw.stream]; !seen {
			u.heads[pw.stream] = head
		}
		for _, it := range pw.items {
			head++
			seq := w.lastSeq + 1
			at := w.s.opts.Clock().UTC()
			stored := it.payload
			wrote = true
			if t := w.s.opts.BlobThreshold; t > 0 && len(stored) > t {
				if err := w.putBlob(ctx, stored); err != nil {
					return nil, wrote, err
				}
				stored = blobRef(stored)
			}
			var runID any
			if req.runID != "" {
				runID = req.runID
			}
			hash := w.hasher.eventHash(w.lastHash, seq, pw.stream, head, it.typ, it.version, req.runID, stored, at.UnixNano())
			if err := w.exec(ctx, insertEvent, seq, pw.stream, head, it.typ, it.version, runID, string(stored), at.UnixNano(), hash); err != nil {
				return nil, wrote, fmt.Errorf("events: insert %s seq %d: %w", it.typ, seq, err)
			}
			ev := Event{Seq: seq, Stream: pw.stream, Version: head, Type: it.typ, TypeVersion: it.version,
				RunID: req.runID, Payload: it.payload, At: at, Hash: hash}
			for _, p := range w.s.opts.Projectors {
				if err := p.Project(ctx, tx, &ev, it.p); err != nil {
					return nil, wrote, fmt.Errorf("project %s seq %d: %w", it.typ, seq, err)
				}
			}
			w.lastSeq, w.lastHash = seq, hash
			out = append(out, ev)
		}
		w.heads[pw.stream] = head
	}
	return out, wrote, nil
}

func (w *writerState) putBlob(ctx context.Context, b []byte) error {
	if err := w.exec(ctx, `INSERT OR IGNORE INTO blobs (hash, size, bytes) VALUES (?, ?, ?)`, BlobHash(b), len(b), b); err != nil {
		return fmt.Errorf("events: put blob: %w", err)
	}
	return nil
}

func (w *writerState) exclusive(req *request) {
	ctx := req.ctx
	var res result
	if err := w.begin(context.Background()); err != nil {
		res.err = err
	} else if err := req.fn(ctx, &Tx{ctx: ctx, w: w}); err != nil {
		w.rollback()
		res.err = err
	} else if _, err := w.conn.ExecContext(context.Background(), `COMMIT`); err != nil {
		w.rollback()
		res.err = fmt.Errorf("events: commit: %w", err)
	}
	// fn may have changed anything; start from the database again.
	if err := w.reload(context.Background()); err != nil && res.err == nil {
		res.err = err
	}
	req.reply <- res
	w.s.broadcast()
}

// blobRef is the stored stand-in for a payload kept in blobs.
func blobRef(payload []byte) []byte {
	return []byte(`{"$blob":"` + BlobHash(payload) + `","size":` + strconv.Itoa(len(payload)) + `}`)
}
