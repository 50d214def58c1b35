package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// Recall returns up to k memories of ns matching query, best first, ranked
// by BM25 over ns's memories (its own corpus: how rare a word is counts
// among them only), equal scores by id, and then by embeddings if an
// Embedder is configured; k <= 0 means DefaultK. It first waits until the
// index has absorbed every event in the log at the time of the call, so
// it sees all earlier Remember, Forget and Commit calls, from any process.
// It records nothing. Errors: ErrInvalid, ErrClosed, an *IndexError while
// the indexer is failing, the context's, or the embedder's.
func (l *Local) Recall(ctx context.Context, ns, q string, k int) ([]Hit, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q) == "" {
		return nil, invalidf("recall in %q: empty query", ns)
	}
	if k <= 0 {
		k = DefaultK
	}
	release, err := l.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("memory: recall in %q: %w", ns, err)
	}
	defer release()
	if err := l.catchUpTo(ctx); err != nil {
		return nil, fmt.Errorf("memory: recall in %q: %w", ns, err)
	}
	size := k
	if l.opts.Embedder != nil {
		size = max(k, l.opts.RerankCandidates)
	}
	hits, err := l.search(ctx, ns, q, size)
	if err != nil {
		return nil, fmt.Errorf("memory: recall in %q: %w", ns, err)
	}
	if l.opts.Embedder != nil {
		if hits, err = l.rerank(ctx, q, hits); err != nil {
			return nil, fmt.Errorf("memory: recall in %q: %w", ns, err)
		}
	}
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// RecallFor recalls for the agent working on s and records a
// memory.recalled event with the query and hits on s's stream, so a replay
// can answer from the log. It returns the new handle. Errors: those of
// Recall, and session.ErrStale if s is not its session's head (nothing is
// recorded then).
func (l *Local) RecallFor(ctx context.Context, s *session.Session, ns, q string, k int, opts ...RecallOption) (*session.Session, []Hit, error) {
	if s == nil {
		return nil, nil, invalidf("recall in %q: nil session", ns)
	}
	var o recallOptions
	for _, opt := range opts {
		opt(&o)
	}
	if k <= 0 {
		k = DefaultK
	}
	hits, err := l.Recall(ctx, ns, q, k)
	if err != nil {
		return nil, nil, err
	}
	next, err := s.Emit(ctx, nil, events.MemoryRecalled{Namespace: ns, Query: q, K: k, Hits: eventHits(hits), Session: s.ID(), Agent: o.agent})
	if err != nil {
		return nil, nil, fmt.Errorf("memory: record recall in %q: %w", ns, err)
	}
	return next, hits, nil
}

// catchUpTo waits until the index covers the log's current head.
func (l *Local) catchUpTo(ctx context.Context) error {
	head, err := l.store.Head(ctx)
	if err != nil {
		return err
	}
	return l.progress.wait(ctx, head.Seq, l.hurry)
}

// search runs the BM25 query and returns up to size live hits.
func (l *Local) search(ctx context.Context, ns, q string, size int) ([]Hit, error) {
	pending := l.forgets.count()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.idx == nil {
		return nil, ErrClosed
	}
	// Ask for extra hits to make up for tombstones not yet indexed.
	req := newRequest(l.analyzer, *l.stats.Load(), ns, q, size+pending)
	if req == nil {
		return nil, nil // only stop words: nothing can match
	}
	res, err := l.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, &IndexError{Op: "search", Err: err}
	}
	hits := make([]Hit, 0, min(size, len(res.Hits)))
	for _, m := range res.Hits {
		if len(hits) == size {
			break
		}
		if pending > 0 && l.forgets.has(m.ID) {
			continue
		}
		h := Hit{ID: m.ID, Namespace: ns, Score: m.Score}
		h.Text, _ = m.Fields[fieldText].(string)
		if raw, _ := m.Fields[fieldMeta].(string); raw != "" {
			if err := json.Unmarshal([]byte(raw), &h.Meta); err != nil {
				return nil, &IndexError{Op: "search", Err: fmt.Errorf("decode meta of %s: %w", m.ID, err)}
			}
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// isLive reports whether id is a memory of ns that has not been forgotten.
// Caller holds the index (acquire).
func (l *Local) isLive(ctx context.Context, ns, id string) (bool, error) {
	if err := l.catchUpTo(ctx); err != nil {
		return false, err
	}
	if l.forgets.has(id) {
		return false, nil
	}
	tq := query.NewTermQuery(ns)
	tq.SetField(fieldNS)
	bq := query.NewBooleanQuery([]query.Query{query.NewDocIDQuery([]string{id})}, nil, nil)
	bq.AddFilter(tq)
	req := bleve.NewSearchRequestOptions(bq, 1, 0, false)
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.idx == nil {
		return false, ErrClosed
	}
	res, err := l.idx.SearchInContext(ctx, req)
	if err != nil {
		return false, &IndexError{Op: "search", Err: err}
	}
	return res.Total > 0, nil
}
