package memory_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath/memory"
)

// keywordEmbedder embeds a text as [has "red", has "blue"], and can fail.
type keywordEmbedder struct {
	mu    sync.Mutex
	calls [][]string
	err   error
}

func (e *keywordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, texts)
	if e.err != nil {
		return nil, e.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := []float32{0, 0}
		if strings.Contains(t, "red") {
			v[0] = 1
		}
		if strings.Contains(t, "blue") {
			v[1] = 1
		}
		out[i] = v
	}
	return out, nil
}

func TestLocal_Rerank(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	emb := &keywordEmbedder{}
	m := MustOpenLocal(t, rt, memory.LocalOptions{Embedder: emb, RerankCandidates: 10})
	// BM25 ranks the short memos first; only the long one is about red.
	ids := seed(t, m, "ns",
		"car blue",
		"car blue too",
		"a car that is painted red, parked beside the house on the hill all year",
	)
	hits, err := m.Recall(t.Context(), "ns", "red car", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != ids[2] || math.Abs(hits[0].Score-1) > 1e-9 {
		t.Fatalf("hits = %+v, want %s with cosine 1", hits, ids[2])
	}
	// All three candidates and the query went to the embedder at once.
	if len(emb.calls) != 1 || len(emb.calls[0]) != 4 || emb.calls[0][0] != "red car" {
		t.Fatalf("embedder calls = %q", emb.calls)
	}
	// Ties (both blue memos have cosine 1 with "blue car") keep id order.
	hits, err = m.Recall(t.Context(), "ns", "blue car", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].ID > hits[1].ID || hits[0].Score != hits[1].Score {
		t.Fatalf("tied hits = %+v, want id order", hits)
	}
	emb.err = errors.New("endpoint down")
	if _, err := m.Recall(t.Context(), "ns", "car", 1); !errors.Is(err, emb.err) {
		t.Fatalf("err = %v, want the embedder's", err)
	}
}
