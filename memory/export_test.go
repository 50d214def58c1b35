package memory

import (
	"context"
	"encoding/json"
	"time"
)

// Test seams for the external tests. They live here, not in an internal
// test package, because those tests open a rath.Runtime and package rath
// imports memory.

// SetAfterFlush makes the Local call f after each durable index batch.
func SetAfterFlush(o *LocalOptions, f func(seq int64)) { o.afterFlush = f }

// IndexState opens the index at dir read as it is on disk and returns the
// seq, hash and statistics it accounts for.
func IndexState(dir string) (seq int64, hash string, docs, tokens int64, err error) {
	idx, st, err := openExisting(dir, time.Second)
	if err != nil {
		return 0, "", 0, 0, err
	}
	defer idx.Close()
	t := st.total()
	return st.Seq, st.Hash, t.Docs, t.Tokens, nil
}

// Stats waits for the index to catch up and returns the live document and
// token counts searches score with.
func (l *Local) Stats() (docs, tokens int64) {
	release, err := l.acquire(context.Background())
	if err != nil {
		return -1, -1
	}
	defer release()
	if err := l.catchUpTo(context.Background()); err != nil {
		return -1, -1
	}
	t := l.stats.Load().total()
	return t.Docs, t.Tokens
}

// NamespaceStats returns the BM25 statistics of one namespace, once the
// index has caught up with the log.
func (l *Local) NamespaceStats(ns string) (docs, tokens int64) {
	release, err := l.acquire(context.Background())
	if err != nil {
		return -1, -1
	}
	defer release()
	if err := l.catchUpTo(context.Background()); err != nil {
		return -1, -1
	}
	c := l.stats.Load().Namespaces[ns]
	return c.Docs, c.Tokens
}

// Explain runs the recall query with bleve's explanation on and returns
// the explanation of the best hit as JSON.
func (l *Local) Explain(ctx context.Context, ns, q string) (string, error) {
	release, err := l.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	if err := l.catchUpTo(ctx); err != nil {
		return "", err
	}
	req := newRequest(l.analyzer, *l.stats.Load(), ns, q, 1)
	req.Explain = true
	l.mu.RLock()
	defer l.mu.RUnlock()
	res, err := l.idx.SearchInContext(ctx, req)
	if err != nil || len(res.Hits) == 0 {
		return "", err
	}
	raw, err := json.Marshal(res.Hits[0].Expl)
	return string(raw), err
}

// AddPendingForget registers a tombstone the index never absorbs, as if
// the indexer had not reached it yet.
func (l *Local) AddPendingForget(id string) { l.forgets.add(id, 1<<62) }

// Segments returns how many in-memory and on-disk segments the index's
// current root holds; it settles once scorch's background merging ends.
func (l *Local) Segments() (inMemory, onDisk uint64) {
	release, err := l.acquire(context.Background())
	if err != nil {
		return 0, 0
	}
	defer release()
	l.mu.RLock()
	m := l.idx.StatsMap()
	l.mu.RUnlock()
	if inner, ok := m["index"].(map[string]any); ok {
		m = inner
	}
	mem, _ := m["num_root_memorysegments"].(uint64)
	file, _ := m["num_root_filesegments"].(uint64)
	return mem, file
}

// SetIndexFormat rewrites the format recorded in the index at dir, as if
// another build had written it.
func SetIndexFormat(dir string, format int) error {
	idx, st, err := openExisting(dir, time.Second)
	if err != nil {
		return err
	}
	defer idx.Close()
	st.Format = format
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	b := idx.NewBatch()
	b.SetInternal(stateKey, raw)
	return batchDurably(idx, b)
}

// Hold keeps the index open, as a call using it does, until release.
func (l *Local) Hold(ctx context.Context) (release func(), err error) { return l.acquire(ctx) }
