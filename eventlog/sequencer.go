package eventlog

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gorath/rath/events"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sequencing at the end, on PostgreSQL. The log's one order (seqs, which
// readers, the Merkle tree and checkpoints follow) is handed out by the
// counter in chain_lock, whose row is the chain lock. A transaction that
// took it at BEGIN held it across every client round trip of its batch
// (the projectors' reads, the rows), so every writer of every process
// waited out the others' round trips, and a fleet with the database at a
// distance was no faster with more workers.
//
// A batch is written instead with its seqs unknown until its end. Its
// events carry placeholders (seqPlaceholder), and so does every
// statement its projectors write them into; the BEGIN and the lock
// (lockStatement, which also records the counter in the transaction's
// setting rath.seq_base) are queued ahead of the batch's first
// statement that writes, and the statements are sent in pipelines, so
// the lock is taken by the server when it reaches it: usually in the
// pipeline that also holds the rows and the COMMIT, so the lock is held
// only while the server runs that pipeline. The server renders each
// placeholder as the setting plus the event's offset (renderSeqs), and
// the statement that inserts the rows numbers them and computes their
// leaf hashes (the client sends each leaf line split around its seq) and
// moves the counter (pgBatchInsert). The writer learns the seqs from the
// lock's answer and fills them into the events it returns.
//
// What the batch decided before the lock was decided on the writer's
// caches and on reads made without it: a stream's head (an insert at a
// version another process took collides on the (stream, version) index,
// and the batch is redone after a reload), a lease's token (confirmed
// after the lock by leaseConfirm, which fails the batch if it moved: it
// is redone the usual way, which reports the fence), and the projectors'
// reads of other rows, which only grow (a fork's source, a merge's
// parents). A refusal decided on the caches (a version conflict, a
// fenced lease) is checked on the server before it is returned.
//
// Transactions still take the lock at BEGIN the usual way (lockAndCatchUp)
// when they hand an AppendTx function a *sql.Tx, when a batch is redone
// with a savepoint a request or with its queued statements run one by
// one, when the caches are not loaded, and after a redo (forceEarly).

// leadingStatements are the statements a late transaction queues ahead of
// its batch's own: BEGIN and the lock.
const leadingStatements = 2

// lateIdle is the longest a connection may have been idle for a
// transaction to begin on it late without asking first whether it is
// still there: a connection the server dropped (a restart) fails its
// first statement, and the usual way retries that on a new connection
// knowing nothing ran.
const lateIdle = time.Second

// lockStatement takes the chain lock and records the counter, the seq
// before the transaction's first, in the transaction's setting
// rath.seq_base, which the placeholders and the rows' seqs are computed
// from.
const lockStatement = `SELECT seq, set_config('rath.seq_base', seq::text, true) FROM chain_lock WHERE id = 1 FOR UPDATE`

// seqBase is the setting as the server reads it.
const seqBase = `current_setting('rath.seq_base')::bigint`

// seqPlaceholder is the seq of a late transaction's events before it is
// known: the k-th event of the transaction has seqPlaceholder + k. The
// range is far from any seq and any other number a projector writes.
const seqPlaceholder int64 = -(1 << 62)

// maxPlaceholders bounds the events of one transaction.
const maxPlaceholders = 1 << 40

// isPlaceholder reports whether v is a placeholder seq.
func isPlaceholder(v int64) bool { return v > seqPlaceholder && v <= seqPlaceholder+maxPlaceholders }

// leaseConfirm fails (dividing by zero) unless run's lease token is
// token, or no lease of run was ever recorded (checkLease's rule).
const leaseConfirm = `SELECT 1 / (CASE WHEN EXISTS (SELECT 1 FROM run_leases WHERE run = $1 AND token = $2) OR NOT EXISTS (SELECT 1 FROM run_leases WHERE run = $1) THEN 1 ELSE 0 END)`

// missError is a late transaction whose BEGIN or lock failed (its
// connection was gone, or the server refused it): nothing was written,
// and the batch is done again the usual way. cause is the server's
// answer, or the connection's failure.
type missError struct{ cause error }

func (e *missError) Error() string {
	return "eventlog: a transaction sequenced at its end could not begin (the connection was gone, or the server refused it): " + e.cause.Error()
}

func (e *missError) Unwrap() error { return e.cause }

// lateState is the writer's state for transactions sequenced at the end.
type lateState struct {
	// lastCommit is when the writer's connection last committed.
	lastCommit time.Time
	// open is set while the open transaction is sequenced at its end:
	// its first leadingStatements queued statements are BEGIN and the
	// lock.
	open bool
	// base is the counter the lock's answer gave (the seq before the
	// transaction's first); known reports that it came.
	base  int64
	known bool
	// missed is set by a run whose late transaction missed, for commit
	// to do the batch again the usual way.
	missed bool
	// forceEarly makes the next transactions take the lock at BEGIN,
	// until one commits: set after a batch had to be redone.
	forceEarly bool
	// rendered caches the texts of statements whose placeholders are
	// rendered as the setting (renderSeqs).
	rendered map[renderedKey]string
}

// mayBeginLate reports whether batch may be written in a transaction
// sequenced at its end: nothing in it must run in a transaction begun
// through database/sql, it is not redone one statement at a time or
// after a failure, and the caches it is checked against are loaded.
func (w *writerState) mayBeginLate(batch []*request) bool {
	o := &w.opt
	return w.conn != nil && len(batch) > 0 && w.batched() &&
		!w.queueOff && !w.savepoints && !o.forceEarly &&
		!needsSQLTx(batch) &&
		w.dataVersion >= 0 && w.lastSeq > 0 && w.keyErr == nil &&
		w.fingerprint != "" && w.merkleFrom != 0 && w.v2From != 0
}

// queueLateBegin queues BEGIN and the lock ahead of everything the batch
// queues.
func (w *writerState) queueLateBegin() {
	w.opt.known = false
	w.pend.queued = append(w.pend.queued,
		queuedStmt{query: `BEGIN`},
		queuedStmt{query: lockStatement, base: &w.opt.base, known: &w.opt.known})
}

// lateUnsent reports whether the open transaction is sequenced at its end
// and nothing of it has reached the server: there is nothing to roll
// back.
func (w *writerState) lateUnsent() bool { return w.opt.open && w.pend.sent == 0 }

// readsUnlocked reports whether a read with args may run now without the
// lock, outside the transaction: in a late transaction that sent nothing
// and queued nothing of its batch yet (so there is nothing of its own for
// the read to see), for a read that names no placeholder. What it reads
// is then as of the read, not of the commit, which is what the rest of
// the batch was decided on too (the caches).
func (w *writerState) readsUnlocked(args []any) bool {
	return w.opt.open && w.pend.sent == 0 && len(w.pend.queued) == leadingStatements && !hasPlaceholder(args)
}

// missedAt reports whether the queued statement that failed at index i
// with err, in a pipeline that also held the COMMIT when commit is set,
// was one of the late transaction's own (BEGIN, the lock), so that
// nothing of the batch ran.
func (w *writerState) missedAt(i int, err error, commit bool) bool {
	if !w.opt.open || i >= leadingStatements {
		return false
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		// The server refused it: it ran nothing after it, and a session
		// it ended (FATAL) ran nothing at all.
		return true
	case i == 0 && pgconn.SafeToRetry(err):
		return true // never sent
	default:
		// No answer: with the COMMIT in the pipeline, it may have run.
		return !commit
	}
}

// missed records a late transaction that missed: the transaction is
// rolled back, the caches are put back as they were before the batch,
// and the batch is done again the usual way. A connection that failed is
// replaced (which reloads the caches).
func (w *writerState) missed(start undo, connFailed bool) {
	leases := w.leases
	w.leases = nil
	w.rollback()
	w.restore(start)
	w.leases = leases
	w.nextFront, w.nextHead = nil, TreeHead{}
	if connFailed {
		w.disconnect()
	}
	w.opt.missed, w.opt.forceEarly = true, true
	w.s.missed.Add(1)
}

// committedLate records a late transaction that committed.
func (w *writerState) committedLate() { w.s.late.Add(1) }

// connFailed reports whether err means the connection is gone (no answer
// the server sent).
func connFailed(err error) bool {
	var pe *pgconn.PgError
	return !errors.As(err, &pe) || pe.Severity == "FATAL" || pe.Severity == "PANIC"
}

// renderedKey names a statement text with the arguments that hold
// placeholders (a bit each).
type renderedKey struct {
	query string
	mask  uint64
}

// paramRef matches a PostgreSQL placeholder, $n.
var paramRef = regexp.MustCompile(`\$[0-9]+`)

// renderSeqs returns query and args with every placeholder seq among args
// rendered as the server computes it: the argument becomes the event's
// offset and its $n the setting plus it. Outside a late transaction, and
// for statements without placeholders, it returns them as they are.
// query's placeholders are PostgreSQL's ($n).
func (w *writerState) renderSeqs(query string, args []any) (string, []any) {
	if !w.opt.open {
		return query, args
	}
	var mask uint64
	for i, a := range args {
		if v, ok := a.(int64); ok && isPlaceholder(v) && i < 64 {
			mask |= 1 << i
		}
	}
	if mask == 0 {
		return query, args
	}
	out := make([]any, len(args))
	copy(out, args)
	for i := range out {
		if mask&(1<<i) != 0 {
			out[i] = out[i].(int64) - seqPlaceholder
		}
	}
	key := renderedKey{query, mask}
	if q, ok := w.opt.rendered[key]; ok {
		return q, out
	}
	q := paramRef.ReplaceAllStringFunc(query, func(ref string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(ref, "$"))
		if err != nil || n < 1 || n > 64 || mask&(1<<(n-1)) == 0 {
			return ref
		}
		return "(" + seqBase + " + " + ref + "::bigint)"
	})
	if w.opt.rendered == nil || len(w.opt.rendered) >= maxHeadCache {
		w.opt.rendered = map[renderedKey]string{}
	}
	w.opt.rendered[key] = q
	return q, out
}

// hasPlaceholder reports whether args hold a placeholder seq.
func hasPlaceholder(args []any) bool {
	for _, a := range args {
		if v, ok := a.(int64); ok && isPlaceholder(v) {
			return true
		}
	}
	return false
}

// sequenced fills the seqs and leaf hashes of a late transaction's events
// into results, once the pipeline that wrote them committed: the lock's
// answer gave the base.
func (w *writerState) sequenced(results []result) error {
	if !w.opt.known {
		return storageErr("commit", errors.New("the chain lock's answer did not come back"))
	}
	return w.fillSeqs(results, w.pend.prefix, w.pend.suffix)
}

// fillSeqs replaces the placeholder seqs of results' events with
// w.opt.base plus their offsets, and computes their leaf hashes from
// their lines (prefix and suffix, by offset), as the server did.
func (w *writerState) fillSeqs(results []result, prefix, suffix [][]byte) error {
	base := w.opt.base
	var last *events.Event
	for i := range results {
		for j := range results[i].events {
			ev := &results[i].events[j]
			if !isPlaceholder(ev.Seq) {
				continue
			}
			k := ev.Seq - seqPlaceholder
			if k > int64(len(prefix)) || k > int64(len(suffix)) {
				return fmt.Errorf("eventlog: event %d of the transaction has no leaf line (%d)", k, len(prefix))
			}
			ev.Seq = base + k
			leaf := leafHashAt(prefix[k-1], ev.Seq, suffix[k-1])
			ev.Hash = hex.EncodeToString(leaf[:])
			last = ev
		}
	}
	if last != nil {
		w.lastSeq, w.lastHash = last.Seq, last.Hash
	} else {
		w.forceReload() // the tail is not known: it is read again
	}
	return nil
}

// seqName is how an error names the seq of an event being written: a
// placeholder is not one anyone could look up.
func seqName(seq int64) string {
	if isPlaceholder(seq) {
		return fmt.Sprintf("#%d of its transaction", seq-seqPlaceholder)
	}
	return strconv.FormatInt(seq, 10)
}
