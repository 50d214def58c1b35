package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	index "github.com/blevesearch/bleve_index_api"
)

// Purging (docs/EVIDENCE.md, "Erasure"): deleting a document from a
// scorch index only marks it obsolete in its segment, whose file keeps
// the text until a merge rewrites it. Purge deletes the documents, merges
// every segment into one, which leaves the deleted documents out, and
// waits for the persister to remove the old segment files: then no file
// of the index directory holds their text. scorch merges nothing into a
// lone segment, so the deletion adds a placeholder document (a segment
// of its own), which a second batch deletes once merged. It rewrites the index's
// segments, not the log's memories: faster than Rebuild, which reads and
// analyzes every memory again (BenchmarkPurge).

// PurgeStats reports a purge.
type PurgeStats struct {
	// Deleted is the number of documents deleted (ids not in the index
	// are skipped).
	Deleted int `json:"deleted"`
}

// purgeWait bounds the wait for the persister to remove the segment
// files a merge replaced.
const purgeWait = 30 * time.Second

// ErrPurge is returned when the old segment files were still there
// after purgeWait: a caller then rebuilds the index (Rebuild).
var ErrPurge = fmt.Errorf("memory: purge: the index kept replaced segment files")

// Purge deletes the memories ids from the index and compacts it so that
// no file of its directory holds their text, keeping every other memory
// searchable. The log is not read. Errors: ErrClosed, ErrPurge, or the
// index's (a caller falls back to Rebuild, which makes a new index).
func (l *Local) Purge(ctx context.Context, ids []string) (PurgeStats, error) {
	release, err := l.acquire(ctx)
	if err != nil {
		return PurgeStats{}, fmt.Errorf("memory: purge: %w", err)
	}
	defer release()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.RLock()
	idx := l.idx
	l.mu.RUnlock()
	if idx == nil {
		return PurgeStats{}, ErrClosed
	}
	st := l.st
	st.Namespaces = maps.Clone(st.Namespaces)
	b := idx.NewBatch()
	var res PurgeStats
	for _, id := range ids {
		ns, tokens, found, err := docStats(idx, l.analyzer, id)
		if err != nil {
			return res, fmt.Errorf("memory: purge: %w", err)
		}
		if !found {
			continue
		}
		b.Delete(id)
		st.add(ns, tokens, -1)
		res.Deleted++
	}
	if res.Deleted == 0 {
		return res, nil
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return res, fmt.Errorf("memory: purge: %w", err)
	}
	b.SetInternal(stateKey, raw)
	placeholder := document.NewDocument(purgeDocID)
	placeholder.AddField(document.NewTextFieldCustom(purgeDocID, nil, []byte("-"), index.StoreField, nil))
	if err := b.IndexAdvanced(placeholder); err != nil {
		return res, fmt.Errorf("memory: purge: %w", err)
	}
	if err := batchDurably(idx, b); err != nil {
		return res, fmt.Errorf("memory: purge: %w", err)
	}
	l.st = st
	l.publish(st)
	if err := compact(ctx, idx, l.dir); err != nil {
		return res, fmt.Errorf("memory: purge: %w", err)
	}
	b = idx.NewBatch()
	b.Delete(purgeDocID)
	if err := batchDurably(idx, b); err != nil {
		return res, fmt.Errorf("memory: purge: %w", err)
	}
	return res, nil
}

// purgeDocID is the placeholder document's id and field: no memory id
// starts with a control character.
const purgeDocID = "\x01rath.purge"

// compact merges idx's segments into one and waits until the directory
// holds only that one's file.
func compact(ctx context.Context, idx bleve.Index, dir string) error {
	adv, err := idx.Advanced()
	if err != nil {
		return err
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return fmt.Errorf("the index is not a scorch index (%T)", adv)
	}
	deadline := time.Now().Add(purgeWait)
	var merged time.Time
	for {
		// A merge leaves one segment; the persister removes the files it
		// replaced once no reader holds them. Merge again now and then:
		// a segment the persister wrote meanwhile joins it.
		if time.Since(merged) > time.Second {
			if err := sc.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions); err != nil {
				return err
			}
			merged = time.Now()
		}
		n, err := segmentFiles(filepath.Join(dir, "store"))
		if err != nil {
			return err
		}
		if n <= 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return ErrPurge
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// segmentFiles counts the segment files in an index directory.
func segmentFiles(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if strings.EqualFold(filepath.Ext(e.Name()), ".zap") {
			n++
		}
	}
	return n, nil
}

// docStats returns the namespace and analyzed length of a document in
// the index, from its stored fields.
func docStats(idx bleve.Index, an analysis.Analyzer, id string) (ns string, tokens int64, found bool, err error) {
	d, err := idx.Document(id)
	if err != nil {
		return "", 0, false, fmt.Errorf("look up %s: %w", id, err)
	}
	if d == nil {
		return "", 0, false, nil
	}
	var text []byte
	d.VisitFields(func(f index.Field) {
		switch f.Name() {
		case fieldText:
			text = append([]byte(nil), f.Value()...)
		case fieldNS:
			ns = string(f.Value())
		}
	})
	if text == nil || ns == "" {
		return "", 0, false, nil
	}
	return ns, int64(len(an.Analyze(text))), true, nil
}
