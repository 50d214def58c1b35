package memory

import (
	"context"
	"fmt"
	"os"

	"github.com/blevesearch/bleve/v2"
)

// RebuildStats reports a rebuild.
type RebuildStats struct {
	// Seq is the log position the new index accounts for.
	Seq int64 `json:"seq"`
	// Memories is the number of live memories indexed.
	Memories int64 `json:"memories"`
}

// Rebuild replaces the index with one built from the whole log (what
// `rath rebuild --memory` runs). The new index is built beside the old
// one, which keeps serving recalls of what it already holds; recalls that
// need newer events wait for the rebuild. A crash during a rebuild leaves
// the old index in place. Errors: ErrClosed, or the failure to read the log
// or write the index (the old index is kept then).
func (l *Local) Rebuild(ctx context.Context) (RebuildStats, error) {
	return l.RebuildWithProgress(ctx, nil)
}

// RebuildWithProgress is Rebuild that calls progress, if not nil, as it
// goes: the log seq indexed so far, and the head it rebuilds to.
func (l *Local) RebuildWithProgress(ctx context.Context, report func(done, total int64)) (RebuildStats, error) {
	release, err := l.acquire(ctx)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("memory: rebuild: %w", err)
	}
	defer release()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	head, err := l.store.Head(ctx)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("memory: rebuild: %w", err)
	}
	tmp := rebuildDir(l.dir)
	if err := os.RemoveAll(tmp); err != nil {
		return RebuildStats{}, fmt.Errorf("memory: rebuild: %w", err)
	}
	nidx, st, err := createIndex(tmp)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("memory: rebuild: %w", err)
	}
	var durable progress
	durable.init()
	st, err = l.catchUp(ctx, nidx, st, 0, head, func(s state) {
		if report != nil {
			report(s.Seq, head.Seq)
		}
	}, func(seq int64, err error) {
		if err == nil {
			durable.advance(seq)
		}
	})
	if err == nil {
		// The new index must be on disk before it replaces the old one.
		wctx, cancel := context.WithTimeout(ctx, persistTimeout)
		err = durable.wait(wctx, st.Seq, func() {})
		cancel()
	}
	if err == nil {
		err = nidx.Close()
	} else {
		closeQuietly(nidx)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return RebuildStats{}, fmt.Errorf("memory: rebuild: %w", err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idx == nil {
		os.RemoveAll(tmp)
		return RebuildStats{}, ErrClosed
	}
	// From here the old index is gone; if the new one cannot be put in
	// place, start an empty index so the indexer rebuilds it again.
	closeQuietly(l.idx)
	l.idx = nil
	if err := os.RemoveAll(l.dir); err != nil {
		return RebuildStats{}, l.recoverIndex(fmt.Errorf("memory: rebuild: remove old index: %w", err))
	}
	if err := os.Rename(tmp, l.dir); err != nil {
		return RebuildStats{}, l.recoverIndex(fmt.Errorf("memory: rebuild: %w", err))
	}
	idx, err := bleve.Open(l.dir)
	if err != nil {
		return RebuildStats{}, l.recoverIndex(fmt.Errorf("memory: rebuild: reopen: %w", err))
	}
	// writeMu kept the indexer out since head was read, so head is at
	// least as far as the old index had scanned.
	l.idx, l.st, l.scanned = idx, st, head.Seq
	l.publish(st)
	l.durable.reset(st.Seq)
	l.forgets.applied(head.Seq)
	l.progress.advance(head.Seq)
	if err := l.mirror(ctx); err != nil {
		l.log.Debug("memory: record checkpoint", "err", err)
	}
	return RebuildStats{Seq: head.Seq, Memories: st.total().Docs}, nil
}

// recoverIndex puts an empty index at l.dir after a failed swap, so the
// indexer rebuilds from the start of the log, and returns cause. Caller
// holds writeMu and mu.
func (l *Local) recoverIndex(cause error) error {
	os.RemoveAll(l.dir)
	idx, st, err := createIndex(l.dir)
	if err != nil {
		l.log.Error("memory index lost; reopen to rebuild it", "err", err)
		return cause
	}
	l.idx, l.st, l.scanned = idx, st, 0
	l.publish(st)
	l.progress.reset(0)
	l.durable.reset(0)
	l.hurry()
	return cause
}
