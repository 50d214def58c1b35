package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Index field names.
const (
	// fieldText is stored (hits carry their text) and indexed as the text
	// analyzed with "en", each term prefixed with the namespace and
	// nsSeparator: a namespace's terms are its own, so a recall reads the
	// postings of its namespace's memories only.
	fieldText = "text"
	fieldNS   = "ns"   // keyword, stored: the namespace of a memory
	fieldMeta = "meta" // stored only: canonical JSON of the metadata
)

// nsSeparator ends the namespace prefix of an indexed term. Analyzed
// terms never contain it (the tokenizer splits words at control
// characters), so namespace, separator and term read back one way only,
// even for a namespace that contains it.
const nsSeparator = "\x1f"

// nsTerm is term as indexed for namespace ns.
func nsTerm(ns string, term []byte) []byte {
	return append(append(make([]byte, 0, len(ns)+len(nsSeparator)+len(term)), ns+nsSeparator...), term...)
}

// indexFormat changes whenever the mapping or the stored state changes
// shape; an index of another format is rebuilt. 2: terms prefixed with
// their namespace, statistics per namespace.
const indexFormat = 2

// stateKey is the internal key holding the index's state. It is written in
// the same bleve batch as the documents it accounts for, so a crash never
// separates them.
var stateKey = []byte("rath.memory.state")

// state is what an index has absorbed from the log.
type state struct {
	Format int `json:"format"`
	// Seq and Hash name the last event the index accounts for; Hash ties
	// the index to one log, so an index beside another database is caught.
	Seq  int64  `json:"seq"`
	Hash string `json:"hash,omitempty"`
	// Namespaces count the live documents and their analyzed tokens per
	// namespace: the BM25 statistics of a search in that namespace (see
	// bm25Stats). A state handed to searches is never changed again (see
	// preparer.take).
	Namespaces map[string]counts `json:"namespaces,omitempty"`
}

// total counts the live documents and their tokens in every namespace.
func (st state) total() counts {
	var sum counts
	for _, c := range st.Namespaces {
		sum.Docs += c.Docs
		sum.Tokens += c.Tokens
	}
	return sum
}

// counts are the live documents of a namespace and their tokens.
type counts struct {
	Docs   int64 `json:"docs"`
	Tokens int64 `json:"tokens"`
}

// add counts a document of ns with its tokens in (sign 1) or out (-1).
func (st *state) add(ns string, tokens int64, sign int64) {
	if st.Namespaces == nil {
		st.Namespaces = map[string]counts{}
	}
	c := st.Namespaces[ns]
	c.Docs += sign
	c.Tokens += sign * tokens
	if c.Docs == 0 {
		delete(st.Namespaces, ns)
		return
	}
	st.Namespaces[ns] = c
}

// enAnalyzer returns the analyzer texts and queries are analyzed with,
// from idx's mapping.
func enAnalyzer(idx bleve.Index) (analysis.Analyzer, error) {
	an := idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	if an == nil {
		return nil, errors.New("memory: analyzer \"en\" is not registered")
	}
	return an, nil
}

// newMapping returns the lean mapping (preparer.document builds documents
// to match it, and queries are analyzed by it): BM25 scoring, nothing indexed
// dynamically, no term vectors, no doc values, no _all field.
func newMapping() *mapping.IndexMappingImpl {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store, text.IncludeTermVectors, text.IncludeInAll, text.DocValues = true, false, false, false
	ns := bleve.NewKeywordFieldMapping()
	ns.Store, ns.IncludeTermVectors, ns.IncludeInAll, ns.DocValues = true, false, false, false
	meta := bleve.NewTextFieldMapping()
	meta.Index, meta.Store, meta.IncludeTermVectors, meta.IncludeInAll, meta.DocValues = false, true, false, false, false

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldText, text)
	dm.AddFieldMappingsAt(fieldNS, ns)
	dm.AddFieldMappingsAt(fieldMeta, meta)

	m := bleve.NewIndexMapping()
	// BM25 needs scorch on disk; bleve.NewMemOnly would silently fall back
	// to TF-IDF (DEPENDENCY-NOTES §2d).
	m.ScoringModel = index.BM25Scoring
	m.DefaultMapping = dm
	m.DefaultAnalyzer = en.AnalyzerName
	m.IndexDynamic, m.StoreDynamic, m.DocValuesDynamic = false, false, false
	return m
}

// bm25Stats are the statistics bleve scores a search in namespace ns
// with: the namespace is the corpus, as its terms are its own (bleve
// takes each term's document frequency from its postings). bleve's own
// statistics are computed per snapshot and sum each segment's distinct
// terms as the field length, so scores would depend on how segments
// happen to be merged: an index caught up after a crash would rank
// differently from a fresh rebuild. Ours depend only on the namespace's
// live documents: avgdl is the mean number of analyzed tokens per memory
// (rounded up by bleve).
func bm25Stats(st state, ns string) *search.BM25Stats {
	c := st.Namespaces[ns]
	return &search.BM25Stats{
		DocCount:         float64(c.Docs),
		FieldCardinality: map[string]int{fieldText: int(c.Tokens)},
	}
}

// newRequest builds the search for query q in namespace ns: BM25 over the
// namespace's terms of the query (analyzed as the text is; any may
// match), ties broken by id so the order does not depend on segment
// layout. It returns nil when the query has no terms (only stop words).
func newRequest(an analysis.Analyzer, st state, ns, q string, size int) *bleve.SearchRequest {
	tokens := an.Analyze([]byte(q))
	if len(tokens) == 0 {
		return nil
	}
	// One term query per token, as a match query builds them.
	terms := make([]query.Query, len(tokens))
	for i, t := range tokens {
		tq := query.NewTermQuery(string(nsTerm(ns, t.Term)))
		tq.SetField(fieldText)
		terms[i] = tq
	}
	dq := query.NewDisjunctionQuery(terms)
	dq.SetMin(1)
	req := bleve.NewSearchRequestOptions(dq, size, 0, false)
	req.Fields = []string{fieldText, fieldMeta}
	req.SortBy([]string{"-_score", "_id"})
	req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: bm25Stats(st, ns)}
	return req
}

// storeConfig returns the scorch configuration, stored with the index. It
// is a new map each time: bleve writes into it and keeps it.
//
// unsafe_batch makes Batch return once the batch is searchable instead of
// once it is on disk (about 0.6 ms instead of 3.5 ms, DEPENDENCY-NOTES
// §2d): the persister writes it shortly after. That is safe here because
// the log is the source of truth and each batch carries its checkpoint: a
// crash loses documents and checkpoint together, and the next open indexes
// them again.
func storeConfig() map[string]any { return map[string]any{"unsafe_batch": true} }

// createIndex makes a new, empty index at dir (which must not exist or be
// empty).
func createIndex(dir string) (bleve.Index, state, error) {
	idx, err := bleve.NewUsing(dir, newMapping(), scorch.Name, scorch.Name, storeConfig())
	if err != nil {
		return nil, state{}, fmt.Errorf("memory: create index %s: %w", dir, err)
	}
	st := state{Format: indexFormat}
	raw, _ := json.Marshal(st)
	b := idx.NewBatch()
	b.SetInternal(stateKey, raw)
	// Wait until the state is on disk: an index closed without it would
	// look damaged at the next open.
	if err := batchDurably(idx, b); err != nil {
		idx.Close()
		return nil, state{}, fmt.Errorf("memory: create index %s: %w", dir, err)
	}
	return idx, st, nil
}

// persistTimeout bounds the wait for the persister to write a batch to
// disk.
const persistTimeout = 30 * time.Second

// batchDurably applies b and waits until it is persisted.
func batchDurably(idx bleve.Index, b *bleve.Batch) error {
	done := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := idx.Batch(b); err != nil {
		return err
	}
	timer := time.NewTimer(persistTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("batch not persisted after %v", persistTimeout)
	}
}

// corruptError says why an existing index cannot be used; OpenLocal
// rebuilds it.
type corruptError struct{ reason string }

func (e *corruptError) Error() string { return e.reason }

func corruptf(format string, args ...any) error {
	return &corruptError{reason: fmt.Sprintf(format, args...)}
}

// openExisting opens the index at dir and checks it: its state must be
// readable and of this format, and its document count must match the
// state. Any failure other than a lock is a *corruptError. bleve can panic
// on damaged files; that is recovered into a corruptError too.
func openExisting(dir string, lockTimeout time.Duration) (idx bleve.Index, st state, err error) {
	defer func() {
		if r := recover(); r != nil {
			if idx != nil {
				closeQuietly(idx)
			}
			idx, err = nil, corruptf("opening the index panicked: %v", r)
		}
	}()
	idx, err = bleve.OpenUsing(dir, map[string]any{"bolt_timeout": lockTimeout.String()})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, st, fmt.Errorf("%w: %s (waited %v)", ErrLocked, dir, lockTimeout)
	}
	if err != nil {
		return nil, st, corruptf("open: %v", err)
	}
	if st, err = checkIndex(idx); err != nil {
		closeQuietly(idx)
		return nil, st, err
	}
	return idx, st, nil
}

func checkIndex(idx bleve.Index) (state, error) {
	var st state
	raw, err := idx.GetInternal(stateKey)
	if err != nil {
		return st, corruptf("read state: %v", err)
	}
	if raw == nil {
		return st, corruptf("no state recorded")
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, corruptf("decode state: %v", err)
	}
	if st.Format != indexFormat {
		return st, corruptf("index format %d, this build writes %d", st.Format, indexFormat)
	}
	n, err := idx.DocCount()
	if err != nil {
		return st, corruptf("count documents: %v", err)
	}
	if docs := st.total().Docs; int64(n) != docs {
		return st, corruptf("index holds %d documents, its state says %d", n, docs)
	}
	// Touch the stored fields of one document: damaged segment files show
	// up here rather than in the first recall.
	req := bleve.NewSearchRequestOptions(query.NewMatchAllQuery(), 1, 0, false)
	req.Fields = []string{fieldText}
	if _, err := idx.Search(req); err != nil {
		return st, corruptf("probe search: %v", err)
	}
	return st, nil
}

// dirKind says what is at an index path.
type dirKind int

const (
	dirMissing dirKind = iota
	dirEmpty
	dirIndex // looks like a bleve index, healthy or not
)

// inspectDir tells a missing or empty directory from one that holds a
// bleve index. Anything else there is ErrNotIndex: it is not ours to
// delete.
func inspectDir(dir string) (dirKind, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dirMissing, nil
	}
	if err != nil {
		return 0, fmt.Errorf("memory: stat index dir: %w", err)
	}
	if !info.IsDir() {
		return 0, fmt.Errorf("%w: %s is a file", ErrNotIndex, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("memory: read index dir: %w", err)
	}
	if len(entries) == 0 {
		return dirEmpty, nil
	}
	for _, e := range entries {
		// index_meta.json and store/ are what bleve writes; either one,
		// even damaged, marks the directory as an index.
		if e.Name() == "index_meta.json" || (e.Name() == "store" && e.IsDir()) {
			return dirIndex, nil
		}
	}
	return 0, fmt.Errorf("%w: %s holds other files", ErrNotIndex, dir)
}

func closeQuietly(idx bleve.Index) {
	defer func() { _ = recover() }()
	_ = idx.Close()
}
