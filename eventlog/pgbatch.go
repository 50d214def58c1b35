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

	// seq holds each row's offset from the transaction's base seq
	// (sequencer.go); prefix and suffix its leaf line around the seq,
	// from which the server computes its hash.
	seq, version, at, typeVersion []int64
	stream, typ                   []string
	runID                         []*string
	// payload holds the stored payloads themselves, not copies: pgx
	// encodes a []byte as text as it encodes a string.
	payload, salt, prefix, suffix [][]byte

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
	// base and known receive the counter the lock statement of a
	// transaction sequenced at its end answers (sequencer.go).
	base  *int64
	known *bool
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
		p.stream, p.typ, p.payload = p.stream[:n], p.typ[:n], p.payload[:n]
		p.runID, p.salt, p.prefix, p.suffix = p.runID[:n], p.salt[:n], p.prefix[:n], p.suffix[:n]
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

// addEvent queues an event row, offset after the transaction's base
// seq, its leaf line split around the seq.
func (p *pgPending) addEvent(offset int64, stream string, version int64, typ string, typeVersion int, runID string, stored []byte, at int64, salt, prefix, suffix []byte) {
	var run *string
	if runID != "" {
		run = &runID
	}
	p.seq, p.version, p.at, p.typeVersion = append(p.seq, offset), append(p.version, version), append(p.at, at), append(p.typeVersion, int64(typeVersion))
	p.stream, p.typ, p.payload = append(p.stream, stream), append(p.typ, typ), append(p.payload, stored)
	p.runID, p.salt, p.prefix, p.suffix = append(p.runID, run), append(p.salt, salt), append(p.prefix, prefix), append(p.suffix, suffix)
}

// pgBatchInsert writes a batch's blobs and events, moves the chain's
// counter past them, and signals the commit (NOTIFY is delivered at
// commit, and only if it commits). The rows are numbered on the server:
// each one's seq is the transaction's base (the setting the lock
// recorded, sequencer.go) plus its offset, and its leaf hash the hash of
// its line with that seq between the prefix and the suffix the writer
// sent (tlog.RecordHash: SHA-256 of a zero byte and the line), stored as
// hex as the writer would. The statement runs after the lock, so it sees
// every commit made before it. A blob is inserted only if missing, not
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
	SELECT u.* FROM unnest($1::text[], $2::bigint[], $14::bytea[]) AS u(hash, size, bytes)
	WHERE NOT EXISTS (SELECT 1 FROM blobs x WHERE x.hash = u.hash OFFSET 0)
), e AS (
	INSERT INTO events (seq, stream, version, type, type_version, run_id, payload, at, hash, salt)
	SELECT s.seq, u.stream, u.version, u.type, u.type_version, u.run_id, u.payload, u.at,
		encode(sha256('\x00'::bytea || u.prefix || convert_to(s.seq::text, 'UTF8') || u.suffix), 'hex'), u.salt
	FROM unnest($3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::int[], $8::text[], $15::text[], $9::bigint[], $10::bytea[], $11::bytea[], $12::bytea[])
		AS u(off, stream, version, type, type_version, run_id, payload, at, salt, prefix, suffix),
		LATERAL (SELECT ` + seqBase + ` + u.off AS seq) AS s
), c AS (
	UPDATE chain_lock SET seq = seq + $13::bigint WHERE id = 1 AND $13::bigint > 0
)
SELECT pg_notify('` + notifyChannel + `', '')`

// flushPostgres sends the batch's rows in one statement, after the
// projectors' queued statements (and, in a transaction sequenced at its
// end, its BEGIN and lock, if nothing was sent yet) and, with commit,
// before the COMMIT. A collision on the events table means a cached
// stream head was stale: it is reported as errStaleTail, and the batch is
// redone after a reload. (The Merkle tree is built after the commit:
// latetree.go.)
func (w *writerState) flushPostgres(ctx context.Context, commit bool) error {
	p := &w.pend
	args := p.batchArgs()
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
			return fmt.Errorf("%w: insert %d events and %d blobs: %w", errStaleTail, len(p.seq), len(p.blobHash), err)
		}
	}
	return storageErr(fmt.Sprintf("insert %d events", len(p.seq)), err)
}

// batchArgs are pgBatchInsert's arguments. The payloads and the blobs'
// bytes, the batch's bulk, go last: pgx appends each argument to the Bind
// message's buffer, which grows by a quarter at a time once an argument
// overflows it, copying all before it, except for an argument that more
// than doubles it, which it grows to fit; so the bulk's growth comes once,
// after the small ones'.
func (p *pgPending) batchArgs() []any {
	return []any{presized{value: nonNil(p.blobHash), size: p.argsSize()}, nonNil(p.blobSize),
		nonNil(p.seq), nonNil(p.stream), nonNil(p.version), nonNil(p.typ), nonNil(p.typeVersion), nonNil(p.runID), nonNil(p.at),
		nonNil(p.salt), nonNil(p.prefix), nonNil(p.suffix), int64(len(p.seq)),
		nonNil(p.blobBytes), nonNil(p.payload)}
}

// nonNil is s, or an empty slice for nil: pgx sends a nil slice as NULL,
// and unnest(NULL) is no rows but of no array type either.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
