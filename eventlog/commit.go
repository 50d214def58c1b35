package eventlog

import (
	"context"
	"errors"
	"fmt"
	"github.com/gorath/rath/events"
)

type undo struct {
	lastSeq  int64
	lastHash string
	heads    map[string]int64 // previous value, -1 for "not cached"
	pend     pgMark           // rows pending on PostgreSQL
}

// commit writes a batch of requests in one transaction. The fast path
// runs them back to back; if one fails after it may have written (a
// projector refusing an event, a failed insert), the transaction is rolled
// back and the batch is redone with a savepoint around each request, so
// one bad request never takes its batch-mates down. Version conflicts are
// detected before a request writes anything and need no rollback.
//
// An event insert that collides with a stored row means the cached tail
// or heads were stale (another connection wrote unseen): the batch is
// rolled back, the caches re-read and the batch redone.
func (w *writerState) commit(local []*request) {
	var results []result
	var ok int
	var err error
	var batch []*request
	var miss *missError
	defer func() { w.queueOff = false }()
	for attempt := 0; ; attempt++ {
		var dirty, stale bool
		batch, results, ok, dirty, stale = w.run(local, false)
		local = w.withAbsorbed(local)
		if dirty {
			batch, results, ok, _, stale = w.run(local, true)
			local = w.withAbsorbed(local)
		}
		err = nil
		if !stale && ok > 0 {
			// On PostgreSQL the flush sends the batch's event rows, so
			// a stale cache shows here. A pipelined transaction with
			// nothing to write after the rows commits in the same
			// round trip.
			err = w.flushTree(context.Background(), w.inTx && w.tx == nil)
			switch {
			case errors.As(err, &miss):
				w.missed(w.batchStart, connFailed(miss.cause))
				stale = true
			case errors.Is(err, errStaleTail):
				w.rollback()
				stale = true
			case errors.Is(err, errQueuedFailed) && !w.queueOff:
				// Redone below with each statement run where it is
				// queued: the request that queued the failing one fails
				// alone, as it would have without queueing.
				w.rollback()
				w.queueOff, stale = true, true
			}
		}
		if !stale {
			break
		}
		if w.opt.missed {
			// Done again the usual way; not a redo of a stale batch.
			w.opt.missed = false
			attempt--
			continue
		}
		w.s.redone.Add(1)
		w.forceReload()
		if attempt == maxStaleRetries {
			if err == nil {
				err = errStaleTail
			}
			results = make([]result, len(batch))
			for i := range results {
				results[i].err = storageErr("append", err)
			}
			w.replyAll(batch, results)
			return
		}
	}
	if ok == 0 {
		w.replyAll(batch, results)
		return
	}
	if err == nil && w.opt.open {
		// The pipeline that wrote the rows committed them: their seqs
		// are known now.
		err = w.sequenced(results)
	}
	if err == nil {
		err = w.commitTx()
	}
	resolved := false
	if err != nil {
		lost, head, late := w.lost, w.nextHead, w.opt.open
		w.lost = nil
		w.rollback()
		w.forceReload()
		w.disconnect()
		if lost != nil && !w.resolving {
			landed, landedAt, rerr := w.resolveLost(lost)
			switch {
			case rerr == nil && !landed:
				// Nothing of it committed: it is written again, once.
				w.resolving = true
				w.commit(local)
				w.resolving = false
				return
			case rerr == nil && late:
				w.opt.base = landedAt - lost.offset
				err, resolved = w.fillSeqs(results, lost.prefix, lost.suffix), true
			case rerr == nil:
				err, resolved, w.nextHead = nil, true, head
			default:
				err = fmt.Errorf("%w; whether it committed could not be learned: %w", err, rerr)
			}
		}
	}
	if err != nil {
		for i := range results {
			if results[i].err == nil {
				results[i] = result{err: err}
			}
		}
		w.replyAll(batch, results)
		return
	}
	w.committed()
	if !resolved {
		// (A resolved commit's caches are read again.)
		w.treeCommitted()
	}
	if w.lateTree() {
		// The tree is built after the commit, by the builder (latetree.go),
		// which tells Options.AfterCommit of the heads it builds.
		w.s.tree.poked(runsFinished(results))
	}
	for i := range results {
		w.s.evs.Add(int64(len(results[i].events)))
	}
	// Before the replies: a caller that appends and then closes its
	// signer must find the head signed.
	w.afterCommit(results)
	w.replyAll(batch, results)
	w.s.broadcast()
}

// afterCommit tells Options.AfterCommit of the commit just made.
func (w *writerState) afterCommit(results []result) {
	head := w.nextHead
	w.nextHead = TreeHead{}
	if w.s.opts.AfterCommit == nil || head.Size == 0 {
		return
	}
	w.s.opts.AfterCommit(Commit{Head: head, RunsFinished: runsFinished(results)})
}

// runsFinished counts the run.finished events of results.
func runsFinished(results []result) int {
	n := 0
	for _, r := range results {
		for _, ev := range r.events {
			if ev.Type == events.TypeRunFinished {
				n++
			}
		}
	}
	return n
}

// commitTx commits the writer's transaction, after the dialect's last
// word (PostgreSQL's NOTIFY and its check of an aborted transaction).
func (w *writerState) commitTx() error {
	ctx := context.Background()
	if w.txEnded {
		// The flush's pipeline committed (pipelinedtx.go).
		if w.opt.open {
			w.committedLate()
			w.keys.confirmLate()
		}
		w.tx, w.inTx, w.txEnded, w.opt.open = nil, false, false, false
		w.notified = false
		w.pend.reset()
		return nil
	}
	if err := w.s.d.beforeCommit(ctx, w); err != nil {
		return err
	}
	var err error
	if w.tx != nil {
		err = w.tx.Commit()
	} else {
		_, err = w.conn.ExecContext(ctx, `COMMIT`)
	}
	w.markLost(err) // (PostgreSQL's batched writer only)
	w.tx, w.inTx = nil, false
	w.notified = false
	w.pend.reset()
	if err != nil {
		return storageErr("commit", err)
	}
	return nil
}

// maxStaleRetries bounds the redos of a batch whose inserts collided.
const maxStaleRetries = 2

// errStaleTail marks an event insert that collided with a stored row.
var errStaleTail = errors.New("eventlog: the cached chain tail is stale")

// forceReload makes the next begin re-read the chain tail and forget the
// cached heads, after a failure left the in-memory state uncertain.
func (w *writerState) forceReload() {
	w.dataVersion = -1
	w.leaves, w.front, w.nextFront = nil, nil, nil
	w.nextHead = TreeHead{}
	w.heads = map[string]int64{}
	clear(w.leases)
	w.metaWritten = false
}

// run applies the batch inside a new transaction. It returns the results,
// how many requests succeeded, whether the batch must be redone with
// savepoints, and whether it must be redone after a reload because an
// insert collided (in both cases the transaction was rolled back). When no
// request succeeded the transaction is rolled back too.
func (w *writerState) run(local []*request, savepoints bool) (batch []*request, results []result, ok int, dirty, stale bool) {
	ctx := context.Background()
	batch = local
	if err := w.begin(ctx, true, local); err != nil {
		results = make([]result, len(batch))
		for i := range results {
			results[i].err = err
		}
		return batch, results, 0, false, false
	}
	if more := w.absorb(local); len(more) > 0 {
		w.absorbed = append(w.absorbed, more...)
		local = append(local[:len(local):len(local)], more...)
		batch = local
		if err := w.prefetchAbsorbed(ctx, more); err != nil {
			// The transaction is spoilt; the batch is done again after a
			// reload, on a new connection if this one was lost.
			w.rollback()
			w.disconnect()
			return batch, nil, 0, false, true
		}
	}
	results = make([]result, len(batch))
	w.pend.reset()
	if w.opt.open {
		w.queueLateBegin()
	}
	w.notified = false
	w.inBatch, w.savepoints = true, savepoints
	defer func() { w.inBatch, w.savepoints = false, false }()
	start := undo{lastSeq: w.lastSeq, lastHash: w.lastHash, heads: map[string]int64{}}
	w.batchStart = start // its heads fill in as the requests are applied
	for i, req := range batch {
		if req.ctx.Err() != nil {
			// The caller gave up before we started; do not write.
			results[i].err = req.ctx.Err()
			continue
		}
		u := undo{lastSeq: w.lastSeq, lastHash: w.lastHash, heads: map[string]int64{}, pend: w.pend.mark()}
		if savepoints {
			if err := w.exec(ctx, `SAVEPOINT req`); err != nil {
				results[i].err = storageErr("savepoint", err)
				continue
			}
		}
		evs, wrote, err := w.apply(ctx, req, &u)
		for k, v := range u.heads {
			if _, seen := start.heads[k]; !seen {
				start.heads[k] = v
			}
		}
		if w.pend.failed != nil {
			if w.missedAt(w.pend.failedAt, w.pend.failed, false) {
				w.missed(start, connFailed(w.pend.failed))
				return batch, nil, 0, false, true
			}
			return w.redoUnqueued(batch, start)
		}
		if errors.Is(err, errStaleTail) {
			w.rollback()
			w.restore(start)
			return batch, nil, 0, false, true
		}
		if err != nil {
			w.restore(u)
			if wrote && !savepoints {
				w.rollback()
				w.restore(start)
				return batch, nil, 0, true, false
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
					results[j] = result{err: storageErr("release", err)}
				}
				return batch, results, 0, false, false
			}
		}
		results[i].events = evs
		ok++
	}
	if ok == 0 {
		w.rollback()
	}
	return batch, results, ok, false, false
}

// redoUnqueued ends a run in which a projector's queued statement failed
// when sent with a later one: which request it was is not known, so the
// batch is rolled back and redone (as stale) with every statement run
// where it is queued.
func (w *writerState) redoUnqueued(batch []*request, start undo) ([]*request, []result, int, bool, bool) {
	w.rollback()
	w.restore(start)
	w.queueOff = true
	return batch, nil, 0, false, true
}

func (w *writerState) restore(u undo) {
	w.lastSeq, w.lastHash = u.lastSeq, u.lastHash
	w.pend.truncate(u.pend)
	clear(w.leases)
	// The checks queued once a transaction may have gone with the
	// statements dropped: a later request queues them again.
	clear(w.leasesConfirmed)
	w.keys.endTx()
	if keep := w.lastSeq - w.treeSize; keep >= 0 && keep < int64(len(w.leaves)) {
		w.leaves = w.leaves[:keep]
	}
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
