package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// On PostgreSQL a group commit's rows are not sent one statement at a
// time: the blobs and event rows of its requests are collected here while
// the requests are applied (their projections run as before), and written
// just before the commit by one statement, pgBatchInsert, together with
// the batch's tree hashes, the new tree head and the NOTIFY: one round
// trip a batch where there was one an event, one a blob, one for the tree
// and one for the NOTIFY. Arrays (unnest) keep the statement's text the
// same whatever the batch's size, so it is prepared once per connection.
//
// What this changes for a Projector: the event rows of the open batch are
// not in the events table while it projects them (they are handed to it;
// nothing in rath reads them back from the table inside the transaction).

// pgPending is the batch's rows not yet sent.
type pgPending struct {
	blobHash  []string
	blobSize  []int64
	blobBytes [][]byte
	blobSeen  map[string]bool

	seq, version, at, typeVersion []int64
	stream, typ, payload, hash    []string
	runID                         []*string
	salt                          [][]byte

	// queued are the projectors' queued statements (Tx.ExecPipelined),
	// in the order they were queued: those before sent were sent with a
	// later statement (pipelined.go), the rest go with the rows. failed is
	// the error of one that failed when sent early.
	queued   []queuedStmt
	sent     int
	failed   error
	failedAt int // the index in queued of the one that failed
}

// queuedStmt is a statement of Tx.ExecPipelined, its placeholders
// PostgreSQL's.
type queuedStmt struct {
	query string
	args  []any
}

// pgMark is how much was pending when a request began, so a request that
// fails drops only its own rows.
type pgMark struct{ blobs, events, queued int }

// batched reports whether the writer collects rows for pgBatchInsert:
// its dialect's way, in the Merkle format (a store told to write the old
// chain rows writes them one by one, into a schema that may lack the salt).
func (w *writerState) batched() bool { return w.s.d.batchesRows() && !w.s.opts.chainRows }

func (p *pgPending) mark() pgMark {
	return pgMark{blobs: len(p.blobHash), events: len(p.seq), queued: len(p.queued)}
}

// truncate drops what was added after m.
func (p *pgPending) truncate(m pgMark) {
	if m.blobs < len(p.blobHash) {
		for _, h := range p.blobHash[m.blobs:] {
			delete(p.blobSeen, h)
		}
		p.blobHash, p.blobSize, p.blobBytes = p.blobHash[:m.blobs], p.blobSize[:m.blobs], p.blobBytes[:m.blobs]
	}
	if m.events < len(p.seq) {
		n := m.events
		p.seq, p.version, p.at, p.typeVersion = p.seq[:n], p.version[:n], p.at[:n], p.typeVersion[:n]
		p.stream, p.typ, p.payload, p.hash = p.stream[:n], p.typ[:n], p.payload[:n], p.hash[:n]
		p.runID, p.salt = p.runID[:n], p.salt[:n]
	}
	if m.queued < len(p.queued) {
		clear(p.queued[m.queued:]) // their arguments
		p.queued = p.queued[:m.queued]
	}
	// Those of them already sent ran inside the request's savepoint, and
	// the rollback to it undid them.
	p.sent = min(p.sent, m.queued)
}

func (p *pgPending) reset() {
	p.truncate(pgMark{})
	p.failed = nil
}

func (p *pgPending) empty() bool {
	return len(p.blobHash) == 0 && len(p.seq) == 0 && len(p.queued) == 0
}

// addBlob queues a blob under hash h, once per batch.
func (p *pgPending) addBlob(h string, b []byte) {
	if p.blobSeen[h] {
		return
	}
	if p.blobSeen == nil {
		p.blobSeen = map[string]bool{}
	}
	p.blobSeen[h] = true
	p.blobHash, p.blobSize, p.blobBytes = append(p.blobHash, h), append(p.blobSize, int64(len(b))), append(p.blobBytes, b)
}

// addEvent queues an event row.
func (p *pgPending) addEvent(seq int64, stream string, version int64, typ string, typeVersion int, runID string, stored []byte, at int64, hash string, salt []byte) {
	var run *string
	if runID != "" {
		run = &runID
	}
	p.seq, p.version, p.at, p.typeVersion = append(p.seq, seq), append(p.version, version), append(p.at, at), append(p.typeVersion, int64(typeVersion))
	p.stream, p.typ, p.payload, p.hash = append(p.stream, stream), append(p.typ, typ), append(p.payload, string(stored)), append(p.hash, hash)
	p.runID, p.salt = append(p.runID, run), append(p.salt, salt)
}

// pgBatchInsert writes a batch's blobs, events, tree hashes and tree head
// and signals the commit (NOTIFY is delivered at commit, and only if it
// commits). The head is not written when $17 is empty (a batch of no
// events). The head row is updated in place and inserted only when it is
// missing: an UPSERT of an existing row also writes a row-lock record to
// the WAL, one more per commit. A blob is inserted only if missing, not
// with ON CONFLICT DO NOTHING, which logs a second record per blob (the
// speculative insertion's confirmation): writers insert blobs holding the
// chain lock, and the rare collision with another inserter (rath copy) is
// redone as a stale tail. The OFFSET 0 keeps the NOT EXISTS a per-blob
// index probe: without it the planner may turn it into a hash anti join
// that reads the whole blobs table on every commit, which it prefers while
// the table is small and keeps in the writer's cached plan as it grows. A
// data-modifying WITH runs every part even though none is referenced.
const pgBatchInsert = `WITH b AS (
	INSERT INTO blobs (hash, size, bytes)
	SELECT u.* FROM unnest($1::text[], $2::bigint[], $3::bytea[]) AS u(hash, size, bytes)
	WHERE NOT EXISTS (SELECT 1 FROM blobs x WHERE x.hash = u.hash OFFSET 0)
), e AS (
	INSERT INTO events (seq, stream, version, type, type_version, run_id, payload, at, hash, salt)
	SELECT * FROM unnest($4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::int[], $9::text[], $10::text[], $11::bigint[], $12::text[], $13::bytea[])
), t AS (
	INSERT INTO tree_hashes (id, hash)
	SELECT * FROM unnest($14::bigint[], $15::bytea[])
), m AS (
	UPDATE store_meta SET value = $17::text WHERE key = $16::text AND $17::text <> '' RETURNING 1
), n AS (
	INSERT INTO store_meta (key, value)
	SELECT $16::text, $17::text WHERE $17::text <> '' AND NOT EXISTS (SELECT 1 FROM m)
	ON CONFLICT (key) DO UPDATE SET value = excluded.value
)
SELECT pg_notify('` + notifyChannel + `', '')`

// flushPostgres sends the batch's rows, tree hashes and head (treeIDs and
// treeHashes, the tree_hashes rows, and head from the tree's flush; head "" when the batch has
// no event) in one statement, after the projectors' queued statements
// and, with commit, before the COMMIT. A collision on the events table means the
// cached tail or a stream head was stale: it is reported as errStaleTail,
// and the batch is redone after a reload.
func (w *writerState) flushPostgres(ctx context.Context, treeIDs []int64, treeHashes [][]byte, head string, commit bool) error {
	p := &w.pend
	if treeIDs == nil {
		treeIDs = []int64{}
	}
	if treeHashes == nil {
		treeHashes = [][]byte{}
	}
	args := []any{nonNil(p.blobHash), nonNil(p.blobSize), nonNil(p.blobBytes),
		nonNil(p.seq), nonNil(p.stream), nonNil(p.version), nonNil(p.typ), nonNil(p.typeVersion), nonNil(p.runID), nonNil(p.payload), nonNil(p.at), nonNil(p.hash), nonNil(p.salt),
		treeIDs, treeHashes, metaMerkleHead, head}
	var err error
	if commit || p.unsent() > 0 {
		var queuedErr, commitErr error
		var missed bool
		missed, queuedErr, err, commitErr = w.sendFlush(ctx, commit, args...)
		switch {
		case missed:
			return &missError{cause: queuedErr}
		case queuedErr != nil:
			return fmt.Errorf("%w: %w", errQueuedFailed, queuedErr)
		case err == nil && commitErr != nil:
			return storageErr("commit", commitErr)
		}
	} else {
		err = w.exec(ctx, pgBatchInsert, args...)
	}
	if err == nil {
		w.notified = true
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgUniqueViolation {
		if pe.TableName == "events" || pe.TableName == "blobs" {
			return fmt.Errorf("%w: insert %d events and %d blobs from seq %d: %w", errStaleTail, len(p.seq), len(p.blobHash), firstOr(p.seq), err)
		}
		if pe.TableName == "tree_hashes" {
			return fmt.Errorf("eventlog: store the Merkle tree (%d leaves from %d): a tree hash is taken (another writer, or the tree was altered): %w", len(w.leaves), w.treeSize, err)
		}
	}
	return storageErr(fmt.Sprintf("insert %d events from seq %d", len(p.seq), firstOr(p.seq)), err)
}

// nonNil is s, or an empty slice for nil: pgx sends a nil slice as NULL,
// and unnest(NULL) is no rows but of no array type either.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func firstOr(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}
