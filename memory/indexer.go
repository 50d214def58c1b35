package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// indexedTypes are the events the index is built from.
var indexedTypes = []string{events.TypeMemoryRemembered, events.TypeMemoryForgotten}

// run is the background indexer: it wakes on every commit to the store
// (and on kicks and polls), re-reads the log from its checkpoint and
// indexes what it finds. It never blocks the store's writer.
func (l *Local) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	poll := time.NewTicker(l.opts.PollInterval)
	defer poll.Stop()
	failing := false
	for {
		// Take the channel before reading, so a commit made during the
		// pass wakes the next wait.
		wake := l.store.Notify()
		if err := l.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			l.progress.fail(&IndexError{Op: "catch up", Err: err})
			if !failing {
				l.log.Warn("memory indexing failed; retrying", "err", err)
			}
			failing = true
		} else {
			failing = false
		}
		if failing {
			// Back off: retry at the next poll, not at every commit.
			wake = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-l.kick:
		case <-poll.C:
			l.writeMu.Lock()
			if err := l.mirror(ctx); err != nil && ctx.Err() == nil {
				l.log.Debug("memory: record checkpoint", "err", err)
			}
			l.writeMu.Unlock()
		}
	}
}

// hurry wakes the indexer without blocking.
func (l *Local) hurry() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// pass brings the index up to the log's current head.
func (l *Local) pass(ctx context.Context) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	head, err := l.store.Head(ctx)
	if err != nil {
		return err
	}
	if head.Seq <= l.scanned {
		l.progress.advance(l.scanned)
		return nil
	}
	l.mu.RLock()
	idx := l.idx
	l.mu.RUnlock()
	if idx == nil {
		return ErrClosed
	}
	st, err := l.catchUp(ctx, idx, l.st, l.scanned, head, func(st state) {
		// Record each batch as it lands: if a later one fails, the next
		// pass resumes after it rather than indexing it twice.
		l.st, l.scanned = st, st.Seq
		l.publish(st)
		l.forgets.applied(st.Seq)
		l.progress.advance(st.Seq)
		if l.opts.afterFlush != nil {
			l.opts.afterFlush(st.Seq)
		}
	}, l.persisted)
	if err != nil {
		return err
	}
	l.st = st
	l.scanned = head.Seq
	l.progress.advance(head.Seq)
	return nil
}

// catchUp indexes the memory events in (from, head] into idx, whose state
// is st, in batches of BatchSize events, and returns the state after the
// last batch. It is a two-stage pipeline: one goroutine reads, decodes and
// analyzes the next batch while this one waits for bleve to build the
// previous. After each batch is searchable it calls flushed with the state
// it leads to; once the batch is on disk, bleve's persister calls
// persisted with its checkpoint seq.
func (l *Local) catchUp(ctx context.Context, idx bleve.Index, st state, from int64, head eventlog.Head, flushed func(state), persisted func(seq int64, err error)) (state, error) {
	p, err := newPreparer(idx, st, l.opts.BatchSize)
	if err != nil {
		return st, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan *pending, 1)
	prepErr := make(chan error, 1)
	go func() {
		defer close(batches)
		prepErr <- p.run(ctx, l.store, from, head, batches)
	}()
	var werr error
	for b := range batches {
		if werr != nil {
			continue // drain, so the preparer can finish
		}
		seq := b.st.Seq
		b.batch.SetPersistedCallback(func(err error) { persisted(seq, err) })
		if err := idx.Batch(b.batch); err != nil {
			werr = fmt.Errorf("memory: write index batch: %w", err)
			cancel()
			continue
		}
		st = b.st
		p.applied.Store(b.n)
		flushed(st)
	}
	if err := <-prepErr; werr == nil && err != nil {
		werr = err
	}
	return st, werr
}

// pending is one prepared bleve batch and the state it leads to.
type pending struct {
	batch *bleve.Batch
	st    state
	n     int64 // batch number within the pass
}

// preparer turns memory events into bleve batches. Documents are built
// directly (no mapping by reflection) with their text analyzed once: the
// tokens both go to bleve and give the document length for the BM25
// statistics.
type preparer struct {
	idx   bleve.Index
	an    analysis.Analyzer
	size  int
	st    state // the state once every prepared batch is applied
	batch *bleve.Batch
	n     int   // events in the batch being prepared
	num   int64 // number of the batch being prepared

	// applied is the number of the last batch written to the index.
	applied atomic.Int64
	// added and removed remember the documents added and deleted by
	// batches that may not be in the index yet, with their batch number:
	// a tombstone must find the length of a document still in flight,
	// and must not count a deletion twice.
	added   map[string]addedDoc
	removed map[string]int64
}

type addedDoc struct {
	ns     string
	tokens int64
	batch  int64
}

func newPreparer(idx bleve.Index, st state, size int) (*preparer, error) {
	an, err := enAnalyzer(idx)
	if err != nil {
		return nil, err
	}
	// st may be a state searches read: count in a copy.
	st.Namespaces = maps.Clone(st.Namespaces)
	return &preparer{idx: idx, an: an, size: size, st: st, batch: idx.NewBatch(), num: 1,
		added: map[string]addedDoc{}, removed: map[string]int64{}}, nil
}

func (p *preparer) run(ctx context.Context, store *eventlog.Store, from int64, head eventlog.Head, out chan<- *pending) error {
	send := func(seq int64, hash string) error {
		b, err := p.take(seq, hash)
		if err != nil {
			return err
		}
		select {
		case out <- b:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	q := eventlog.Query{Types: indexedTypes, FromSeq: from + 1, ToSeq: head.Seq}
	for ev, err := range store.Scan(ctx, q) {
		if err != nil {
			return fmt.Errorf("memory: read log: %w", err)
		}
		if err := p.apply(ev); err != nil {
			return err
		}
		if p.n >= p.size {
			if err := send(ev.Seq, ev.Hash); err != nil {
				return err
			}
		}
	}
	if p.n > 0 {
		// The last batch accounts for everything up to head, memory
		// events or not.
		return send(head.Seq, head.Hash)
	}
	return nil
}

func (p *preparer) apply(ev events.Event) error {
	pl, err := ev.Decode()
	if errors.Is(err, events.ErrRedacted) {
		return nil // its text was deleted: nothing to index
	}
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	p.n++
	switch e := pl.(type) {
	case *events.MemoryRemembered:
		if e.Backend != "" {
			return nil // kept by another backend (its server indexes it)
		}
		if _, dup := p.added[e.ID]; dup {
			return nil
		}
		d, tokens, err := p.document(e)
		if err != nil {
			return fmt.Errorf("memory: seq %d: %w", ev.Seq, err)
		}
		if err := p.batch.IndexAdvanced(d); err != nil {
			return fmt.Errorf("memory: seq %d: index: %w", ev.Seq, err)
		}
		p.added[e.ID] = addedDoc{ns: e.Namespace, tokens: tokens, batch: p.num}
		delete(p.removed, e.ID)
		p.st.add(e.Namespace, tokens, 1)
	case *events.MemoryForgotten:
		if e.Backend != "" {
			return nil
		}
		if _, done := p.removed[e.ID]; done {
			return nil
		}
		// The memory's own namespace and length, whatever namespace the
		// event names: they are what its document was counted under.
		var tokens int64
		var ns string
		if a, ok := p.added[e.ID]; ok {
			tokens, ns = a.tokens, a.ns
			delete(p.added, e.ID)
		} else {
			var found bool
			if ns, tokens, found, err = p.indexedDoc(e.ID); err != nil {
				return fmt.Errorf("memory: seq %d: %w", ev.Seq, err)
			}
			if !found {
				return nil // never indexed: nothing to delete
			}
		}
		p.removed[e.ID] = p.num
		p.batch.Delete(e.ID)
		p.st.add(ns, tokens, -1)
	}
	return nil
}

// preAnalyzed is an analyzer that returns tokens computed beforehand.
type preAnalyzed analysis.TokenStream

func (t preAnalyzed) Analyze([]byte) analysis.TokenStream { return analysis.TokenStream(t) }

// document builds the index document of a memory, as the mapping in
// newMapping would, and returns its analyzed length.
func (p *preparer) document(e *events.MemoryRemembered) (*document.Document, int64, error) {
	// The analyzer may rewrite its input in place; give it a copy of
	// the stored text.
	tokens := p.an.Analyze([]byte(e.Text))
	for _, t := range tokens {
		t.Term = nsTerm(e.Namespace, t.Term)
	}
	d := document.NewDocument(e.ID)
	d.AddField(document.NewTextFieldCustom(fieldText, nil, []byte(e.Text), index.IndexField|index.StoreField, preAnalyzed(tokens)))
	// A nil analyzer indexes the whole value as one term, like the
	// keyword analyzer.
	d.AddField(document.NewTextFieldCustom(fieldNS, nil, []byte(e.Namespace), index.IndexField|index.StoreField, nil))
	if len(e.Meta) > 0 {
		raw, err := json.Marshal(e.Meta)
		if err != nil {
			return nil, 0, fmt.Errorf("encode meta: %w", err)
		}
		d.AddField(document.NewTextFieldWithIndexingOptions(fieldMeta, nil, raw, index.StoreField))
	}
	return d, int64(len(tokens)), nil
}

// indexedDoc returns the namespace and analyzed length of a document in
// the index, from its stored fields.
func (p *preparer) indexedDoc(id string) (ns string, tokens int64, found bool, err error) {
	return docStats(p.idx, p.an, id)
}

// take closes the batch being prepared with the state accounting for the
// log up to seq: documents and checkpoint go in one bleve batch, durable
// together or not at all.
func (p *preparer) take(seq int64, hash string) (*pending, error) {
	p.st.Seq, p.st.Hash = seq, hash
	raw, err := json.Marshal(p.st)
	if err != nil {
		return nil, fmt.Errorf("memory: encode state: %w", err)
	}
	p.batch.SetInternal(stateKey, raw)
	// The pending state goes to searches; the preparer goes on counting
	// in a copy of the namespaces.
	out := &pending{batch: p.batch, st: p.st, n: p.num}
	p.st.Namespaces = maps.Clone(p.st.Namespaces)
	p.batch, p.n = p.idx.NewBatch(), 0
	p.num++
	p.prune()
	return out, nil
}

// prune forgets the in-flight bookkeeping of batches already in the
// index, where lookups find them, so a long catch-up stays small.
func (p *preparer) prune() {
	if len(p.added)+len(p.removed) < 4*p.size {
		return
	}
	applied := p.applied.Load()
	for id, a := range p.added {
		if a.batch <= applied {
			delete(p.added, id)
		}
	}
	for id, b := range p.removed {
		if b <= applied {
			delete(p.removed, id)
		}
	}
}

// persisted records that the index's batch up to seq is on disk.
func (l *Local) persisted(seq int64, err error) {
	if err != nil {
		// The persister retries with its next snapshot, which includes
		// this batch.
		l.log.Debug("memory: persist index batch", "seq", seq, "err", err)
		return
	}
	l.durable.advance(seq)
}

// mirror copies the on-disk checkpoint to the projection_checkpoints
// table, for tools that inspect the database. The index's own copy is
// authoritative; this one may lag by up to PollInterval. Caller holds
// writeMu.
func (l *Local) mirror(ctx context.Context) error {
	seq, _ := l.durable.get()
	if seq == l.mirrored {
		return nil
	}
	err := l.store.Exclusive(ctx, func(ctx context.Context, tx *eventlog.Tx) error {
		_, err := tx.Exec(`INSERT INTO projection_checkpoints (name, seq) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET seq = excluded.seq`, CheckpointName, seq)
		return err
	})
	if err != nil {
		return err
	}
	l.mirrored = seq
	return nil
}
