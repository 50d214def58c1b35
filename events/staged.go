package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Staged appends (PostgreSQL). One row lock, chain_lock, orders every
// append of every process: the writer holding it gives out the next seqs,
// checks stream versions and leases against the log as it stands, runs
// the projections and extends the Merkle tree, and nothing else can
// commit meanwhile, so seq order is commit order. Before staging, every
// other process's writer queued on that lock, and each took it in turn
// for a commit of its own: a transaction, a catch-up read of what the
// others wrote, its WAL flush, one after the other.
//
// Now a writer asks for the lock without waiting (NOWAIT). If another
// process holds it, the writer stages its batch instead: each append
// becomes a row of append_intents (its own short transaction, which
// takes no lock any other writer waits for, so appends of all processes
// stage in parallel) and the writer waits. A holder claims the staged
// rows in the transaction that holds the lock (DELETE … RETURNING, so a
// claim rolls back with its transaction and nothing is written twice),
// writes them after its own appends exactly as it writes those (version
// checks, fencing, projections, tree, in seq order), and leaves each
// one's outcome in append_outcomes, committed with its events. The
// appender takes its outcome when the holder's commit notifies, and if
// none is there yet tries the lock again itself: whoever holds it next
// writes whatever is staged. One commit, one WAL flush, serves the
// appends of every process.
//
// What the appender had decided stays the appender's: its payloads are
// validated, canonical and redacted before they are staged, and
// Options.StagingTag says which projectors it runs: a holder writes
// only staged rows of its own tag, so a process whose projectors differ
// never writes another's events. Appends with work of their own in the
// transaction (AppendTx, Exclusive) are never staged: they wait for the
// lock as before.

// errLockBusy reports that the chain lock was held by another process
// when a batch that can be staged asked for it.
var errLockBusy = errors.New("events: the chain lock is held by another process")

// How long a staged append waits with no commit seen before its appender
// asks for the lock itself, and doubles up to: the latency of an append
// staged just after the holder's last claim. A holder's transaction
// takes a few milliseconds; asking sooner mostly finds it still held,
// three round trips for nothing.
const (
	minStageBackoff = 10 * time.Millisecond
	maxStageBackoff = 20 * time.Millisecond
)

// maxClaim bounds the staged appends one commit writes for others.
const maxClaim = 256

// outcomeTTL is how long an outcome nobody took (its appender died while
// waiting) stays before a holder deletes it.
const outcomeTTL = 10 * time.Minute

// stagedRequest is a request as staged: what the writer needs to apply
// it in another process. Payloads travel as bytes (base64 in the JSON),
// never re-encoded, since the leaf commits to their exact bytes.
type stagedRequest struct {
	RunID  string        `json:"run,omitempty"`
	Lease  *stagedLease  `json:"lease,omitempty"`
	Writes []stagedWrite `json:"writes"`
}

type stagedLease struct {
	Run   string `json:"run"`
	Token int64  `json:"token"`
}

type stagedWrite struct {
	Stream   string       `json:"stream"`
	Expected int64        `json:"expected"`
	Items    []stagedItem `json:"items,omitempty"`
	Blobs    [][]byte     `json:"blobs,omitempty"`
}

type stagedItem struct {
	Type    string `json:"type"`
	Version int    `json:"v"`
	Payload []byte `json:"payload"`
}

// stagedOutcome is what the holder decided for a staged append: the
// stored events' seq, version, time and leaf hash, or the error.
type stagedOutcome struct {
	Events []stagedEvent `json:"events,omitempty"`
	Err    *stagedError  `json:"err,omitempty"`
}

type stagedEvent struct {
	Seq     int64  `json:"seq"`
	Version int64  `json:"version"`
	At      int64  `json:"at"`
	Hash    string `json:"hash"`
}

// stagedError carries an error across processes with what callers branch
// on: a conflict's and a fencing's fields, ErrInvalid, or one of
// Options.StagedErrors (by index).
type stagedError struct {
	Kind     string `json:"kind"`
	Msg      string `json:"msg"`
	Stream   string `json:"stream,omitempty"`
	Expected int64  `json:"expected,omitempty"`
	Actual   int64  `json:"actual,omitempty"`
	Run      string `json:"run,omitempty"`
	Token    int64  `json:"token,omitempty"`
	Current  int64  `json:"current,omitempty"`
	Sentinel int    `json:"sentinel,omitempty"`
}

// stageable reports whether every request of the batch may be staged.
func (w *writerState) stageable(batch []*request) bool {
	if !w.batched() || w.s.opts.StagingTag == "" || w.s.stopHoldingLock {
		return false
	}
	for _, r := range batch {
		if r.fn != nil || r.txFn != nil || r.remote != 0 {
			return false
		}
	}
	return true
}

func encodeStaged(r *request) ([]byte, error) {
	sr := stagedRequest{RunID: r.runID}
	if r.lease != nil {
		sr.Lease = &stagedLease{Run: r.lease.Run, Token: r.lease.Token}
	}
	for _, pw := range r.writes {
		sw := stagedWrite{Stream: pw.stream, Expected: pw.expected, Blobs: pw.blobs}
		for _, it := range pw.items {
			sw.Items = append(sw.Items, stagedItem{Type: it.typ, Version: it.version, Payload: it.payload})
		}
		sr.Writes = append(sr.Writes, sw)
	}
	return json.Marshal(sr)
}

// decodeStaged rebuilds a staged request for the writer. Its payloads
// are decoded into their structs for the projectors, and must be the
// current version of their type, as prepare made them.
func decodeStaged(id int64, b []byte) (*request, error) {
	var sr stagedRequest
	if err := json.Unmarshal(b, &sr); err != nil {
		return nil, invalid("staged append %d: %v", id, err)
	}
	r := &request{ctx: context.Background(), runID: sr.RunID, reply: make(chan result, 1), remote: id}
	if sr.Lease != nil {
		r.lease = &Lease{Run: sr.Lease.Run, Token: sr.Lease.Token}
	}
	for _, sw := range sr.Writes {
		if sw.Stream == "" && len(sw.Items) > 0 {
			return nil, invalid("staged append %d: empty stream", id)
		}
		pw := pendingWrite{stream: sw.Stream, expected: sw.Expected, blobs: sw.Blobs}
		for _, si := range sw.Items {
			p, err := Decode(si.Type, si.Version, si.Payload)
			if err != nil {
				return nil, fmt.Errorf("staged append %d: %w", id, err)
			}
			if p.EventVersion() != si.Version {
				return nil, invalid("staged append %d: %s version %d is not the current %d", id, si.Type, si.Version, p.EventVersion())
			}
			pw.items = append(pw.items, item{typ: si.Type, version: si.Version, payload: si.Payload, p: p})
		}
		r.n += len(pw.items)
		r.writes = append(r.writes, pw)
	}
	return r, nil
}

// outcomeOf encodes a result for the appender.
func (w *writerState) outcomeOf(res result) []byte {
	var o stagedOutcome
	if res.err != nil {
		o.Err = w.stagedErr(res.err)
	}
	for _, ev := range res.events {
		o.Events = append(o.Events, stagedEvent{Seq: ev.Seq, Version: ev.Version, At: ev.At.UnixNano(), Hash: ev.Hash})
	}
	b, _ := json.Marshal(o) // plain structs: cannot fail
	return b
}

func (w *writerState) stagedErr(err error) *stagedError {
	e := &stagedError{Kind: "other", Msg: err.Error()}
	var ce *ConflictError
	var fe *FencedError
	switch {
	case errors.As(err, &ce):
		e.Kind, e.Stream, e.Expected, e.Actual = "conflict", ce.Stream, ce.Expected, ce.Actual
	case errors.As(err, &fe):
		e.Kind, e.Run, e.Token, e.Current = "fenced", fe.Run, fe.Token, fe.Current
	case errors.Is(err, ErrInvalid):
		e.Kind = "invalid"
	default:
		for i, s := range w.s.opts.StagedErrors {
			if errors.Is(err, s) {
				e.Kind, e.Sentinel = "sentinel", i
				break
			}
		}
	}
	return e
}

// resultOf rebuilds, in the appender's process, the result of its staged
// request from the holder's outcome.
func (s *Store) resultOf(r *request, b []byte) result {
	var o stagedOutcome
	if err := json.Unmarshal(b, &o); err != nil {
		return result{err: storageErr("read staged outcome", err)}
	}
	if e := o.Err; e != nil {
		switch e.Kind {
		case "conflict":
			return result{err: &ConflictError{Stream: e.Stream, Expected: e.Expected, Actual: e.Actual}}
		case "fenced":
			return result{err: &FencedError{Run: e.Run, Token: e.Token, Current: e.Current}}
		case "invalid":
			return result{err: fmt.Errorf("%w (written by another process: %s)", ErrInvalid, e.Msg)}
		case "sentinel":
			if e.Sentinel >= 0 && e.Sentinel < len(s.opts.StagedErrors) {
				return result{err: fmt.Errorf("%w (written by another process: %s)", s.opts.StagedErrors[e.Sentinel], e.Msg)}
			}
		}
		return result{err: fmt.Errorf("events: append written by another process: %s", e.Msg)}
	}
	evs := make([]Event, 0, r.n)
	for _, pw := range r.writes {
		for _, it := range pw.items {
			if len(evs) == len(o.Events) {
				return result{err: storageErr("read staged outcome", fmt.Errorf("%d events for an append of %d", len(o.Events), r.n))}
			}
			se := o.Events[len(evs)]
			evs = append(evs, Event{Seq: se.Seq, Stream: pw.stream, Version: se.Version, Type: it.typ, TypeVersion: it.version,
				RunID: r.runID, Payload: it.payload, At: time.Unix(0, se.At).UTC(), Hash: se.Hash})
		}
	}
	return result{events: evs}
}

// stage stages a batch the chain lock was busy for and waits until each
// append is written, by whichever process holds the lock next (this one
// included: it tries again whenever a commit lands, or after a while).
func (w *writerState) stage(batch []*request) {
	ctx := context.Background()
	ids, err := w.insertIntents(ctx, batch)
	if err != nil {
		results := make([]result, len(batch))
		for i := range results {
			results[i].err = err
		}
		w.s.commits.Add(-1)
		w.replyAll(batch, results)
		return
	}
	w.s.staged.Add(int64(len(batch)))
	// The loop counted a commit for this batch; it made none here.
	w.s.commits.Add(-1)
	waiting := make(map[int64]*request, len(batch))
	// since is when each append was staged: one nobody writes within the
	// busy timeout is withdrawn with ErrBusy, the error the lock's own
	// wait ends with, so that staging never waits longer than the lock.
	since := make(map[int64]time.Time, len(batch))
	now := time.Now()
	for i, id := range ids {
		waiting[id], since[id] = batch[i], now
	}
	notify := w.s.Notify()
	backoff := minStageBackoff
	stop := w.s.stop
	var reqs chan *request
	if w.mayTake {
		reqs = w.s.reqs
	}
	for len(waiting) > 0 {
		timer := time.NewTimer(backoff)
		fired := false
		select {
		case <-notify:
		case <-timer.C:
			fired = true
			backoff = min(2*backoff, maxStageBackoff)
		case <-stop:
			stop = nil // withdraw once at once, then wait as before
		case r := <-reqs:
			// Appends made meanwhile are staged too, for the same holder;
			// one that cannot be waits for the loop.
			more := []*request{r}
			if !w.stageable(more) {
				w.held, reqs = r, nil
			} else {
				w.s.gatherStageable(&more, &w.held)
				if w.held != nil {
					reqs = nil
				}
				w.s.requests.Add(int64(len(more)))
				ids, err := w.insertIntents(ctx, more)
				if err != nil {
					for _, m := range more {
						m.reply <- result{err: err}
					}
				} else {
					w.s.staged.Add(int64(len(more)))
					now := time.Now()
					for i, id := range ids {
						waiting[id], since[id] = more[i], now
					}
				}
			}
		}
		timer.Stop()
		notify = w.s.Notify()
		w.takeOutcomes(ctx, waiting)
		w.withdraw(ctx, waiting, since)
		if len(waiting) > 0 && fired {
			// Nobody wrote them for a while: try to be the one. After a
			// commit the holder itself claims again (commit), so a
			// notification alone is no reason to ask for the lock.
			w.commitClaimed()
		}
	}
}

// gatherStageable moves queued requests that can be staged into batch,
// until the queue is empty or one that cannot comes up (into held).
func (s *Store) gatherStageable(batch *[]*request, held **request) {
	for len(*batch) < maxClaim {
		select {
		case r := <-s.reqs:
			if r.fn != nil || r.txFn != nil {
				*held = r
				return
			}
			*batch = append(*batch, r)
		default:
			return
		}
	}
}

// insertIntents stages each request as a row, in one pipeline, and
// returns their ids in the batch's order.
func (w *writerState) insertIntents(ctx context.Context, batch []*request) ([]int64, error) {
	rows := make([][]byte, len(batch))
	for i, r := range batch {
		b, err := encodeStaged(r)
		if err != nil {
			return nil, storageErr("stage append", err)
		}
		rows[i] = b
	}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	ids := make([]int64, len(batch))
	err := withPgx(w.conn, func(conn *pgx.Conn) error {
		b := &pgx.Batch{}
		for _, row := range rows {
			b.Queue(`INSERT INTO append_intents (tag, request) VALUES ($1, $2) RETURNING id`, w.s.opts.StagingTag, row)
		}
		br := conn.SendBatch(ctx, b)
		for i := range rows {
			if err := br.QueryRow().Scan(&ids[i]); err != nil {
				br.Close()
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		w.disconnect()
		return nil, storageErr("stage append", err)
	}
	return ids, nil
}

// takeOutcomes answers the waiting requests whose outcome is there.
func (w *writerState) takeOutcomes(ctx context.Context, waiting map[int64]*request) {
	ids := make([]int64, 0, len(waiting))
	for id := range waiting {
		ids = append(ids, id)
	}
	rows, err := w.s.rdb.QueryContext(ctx, `DELETE FROM append_outcomes WHERE id = ANY($1) RETURNING id, outcome`, ids)
	if err != nil {
		return // the next wake tries again
	}
	defer rows.Close()
	finished := 0 // run.finished events among the outcomes
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return
		}
		r := waiting[id]
		if r == nil {
			continue
		}
		delete(waiting, id)
		res := w.s.resultOf(r, b)
		for _, ev := range res.events {
			if ev.Type == TypeRunFinished {
				finished++
			}
		}
		w.s.evs.Add(int64(len(res.events)))
		r.reply <- res
	}
	if finished > 0 && w.s.opts.AfterCommit != nil {
		// A signer signs at each run's end, whoever wrote it.
		if head, err := w.s.TreeHead(ctx); err == nil {
			w.s.opts.AfterCommit(Commit{Head: head, RunsFinished: finished})
		}
	}
}

// withdraw takes back the staged appends whose callers gave up, whose
// store is closing, or that waited past the busy timeout (since holds
// when each was staged), and that no holder has claimed: they are
// answered with the context's error, ErrClosed, or a *StorageError of
// Kind ErrBusy, and never written. One a holder has claimed is being
// written; its outcome is waited for.
func (w *writerState) withdraw(ctx context.Context, waiting map[int64]*request, since map[int64]time.Time) {
	var ids []int64
	closing := false
	select {
	case <-w.s.stop:
		closing = true
	default:
	}
	now := time.Now()
	for id, r := range waiting {
		if closing || r.ctx.Err() != nil || now.Sub(since[id]) > w.s.opts.BusyTimeout {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	rows, err := w.s.rdb.QueryContext(ctx, `DELETE FROM append_intents WHERE id IN (SELECT id FROM append_intents WHERE id = ANY($1) FOR UPDATE SKIP LOCKED) RETURNING id`, ids)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if rows.Scan(&id) != nil {
			return
		}
		if r := waiting[id]; r != nil {
			delete(waiting, id)
			err := r.ctx.Err()
			if err == nil && closing {
				err = ErrClosed
			} else if err == nil {
				err = &StorageError{Op: "stage append", Kind: ErrBusy,
					Err: fmt.Errorf("no holder of the chain lock wrote it within %s", w.s.opts.BusyTimeout)}
			}
			delete(since, id)
			r.reply <- result{err: err}
		}
	}
}

// claimAgain is commitClaimed after a commit that wrote staged appends,
// and reports whether it wrote any.
func (w *writerState) claimAgain() bool {
	before := w.s.combined.Load()
	w.commitClaimed()
	return w.s.combined.Load() != before
}

// commitClaimed takes the chain lock if it is free and writes what is
// staged: a commit with no appends of this process's own.
func (w *writerState) commitClaimed() {
	w.claimOnly = true
	defer func() { w.claimOnly = false }()
	before := w.s.combined.Load()
	w.commit(nil)
	if w.s.combined.Load() != before {
		w.s.commits.Add(1)
	}
}

// claimStatement claims up to maxClaim staged appends of the writer's
// tag, oldest first; reclaimStatement claims exactly those of a first
// attempt again, when a batch is redone in a new transaction (any another
// holder took meanwhile are its to write).
const (
	claimStatement   = `DELETE FROM append_intents WHERE id IN (SELECT id FROM append_intents WHERE tag = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id, request`
	reclaimStatement = `DELETE FROM append_intents WHERE id = ANY($1) RETURNING id, request`
)

// claimed is a staged row a holder took.
type claimed struct {
	id      int64
	request []byte
}

// withClaimed returns the batch with the claimed staged appends after its
// own, in staging order. One that cannot be decoded is answered with
// its error and not written.
func (w *writerState) withClaimed(batch []*request, rows []claimed) []*request {
	sort.Slice(rows, func(i, j int) bool { return rows[i].id < rows[j].id })
	out := append([]*request(nil), batch...)
	w.claimIDs = w.claimIDs[:0]
	for _, c := range rows {
		w.claimIDs = append(w.claimIDs, c.id)
		r, err := decodeStaged(c.id, c.request)
		if err != nil {
			w.badClaims = append(w.badClaims, badClaim{id: c.id, err: err})
			continue
		}
		out = append(out, r)
	}
	return out
}

type badClaim struct {
	id  int64
	err error
}

// writeOutcomes records, in the open transaction, the outcome of every
// staged append the batch wrote or refused for others.
func (w *writerState) writeOutcomes(ctx context.Context, batch []*request, results []result) error {
	var ids []int64
	var outs [][]byte
	for i, r := range batch {
		if r.remote != 0 {
			ids = append(ids, r.remote)
			outs = append(outs, w.outcomeOf(results[i]))
		}
	}
	for _, b := range w.badClaims {
		ids = append(ids, b.id)
		outs = append(outs, w.outcomeOf(result{err: b.err}))
	}
	if len(ids) == 0 {
		return nil
	}
	q := `INSERT INTO append_outcomes (id, outcome) SELECT * FROM unnest($1::bigint[], $2::bytea[])`
	if w.s.commits.Load()%1024 == 0 {
		q = `WITH old AS (DELETE FROM append_outcomes WHERE decided_at < now() - make_interval(secs => ` + fmt.Sprint(int(outcomeTTL.Seconds())) + `)) ` + q
	}
	if _, err := w.conn.ExecContext(ctx, q, ids, outs); err != nil {
		return storageErr("record staged outcomes", err)
	}
	w.s.combined.Add(int64(len(ids)))
	return nil
}
