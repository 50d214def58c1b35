package memory_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/memory"
)

// TestLocal_BM25 checks that recall scores are BM25 over the statistics
// Local keeps: idf = ln(1 + (N-n+0.5)/(n+0.5)), tf = sqrt(freq) (bleve's
// variant), document length normalized by the mean token count.
func TestLocal_BM25(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{})
	ids := seed(t, m, "fruit",
		"apple apple banana",          // 3 tokens
		"banana cherry",               // 2 tokens
		"cherry date elderberry fig",  // 4 tokens
		"grape grape grape apple fig", // 5 tokens
	)
	seed(t, m, "other", "apple") // counts in N and the mean, not in the results
	const N, total = 5, 3 + 2 + 4 + 5 + 1
	if docs, tokens := m.Stats(); docs != N || tokens != total {
		t.Fatalf("stats %d docs %d tokens, want %d, %d", docs, tokens, N, total)
	}
	avgdl := math.Ceil(float64(total) / N) // bleve rounds the mean up
	bm25 := func(freq, dl, n float64) float64 {
		idf := math.Log(1 + (N-n+0.5)/(n+0.5))
		tf := math.Sqrt(freq)
		k1, b := 1.2, 0.75
		return idf * tf * k1 / (tf + k1*(1-b+b*dl/avgdl))
	}
	hits, err := m.Recall(t.Context(), "fruit", "apples", 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    string
		score float64
	}{
		{ids[0], bm25(2, 3, 3)},
		{ids[3], bm25(1, 5, 3)},
	}
	if len(hits) != len(want) {
		t.Fatalf("hits = %v, want %d", hits, len(want))
	}
	for i, w := range want {
		// Norms are stored as float32, hence the tolerance.
		if hits[i].ID != w.id || math.Abs(hits[i].Score-w.score) > 1e-6*w.score {
			t.Errorf("hit %d = %s %.9f, want %s %.9f", i, hits[i].ID, hits[i].Score, w.id, w.score)
		}
	}
	expl, err := m.Explain(t.Context(), "fruit", "apple")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"as per bm25 model", "avgFieldLength=3.000000"} {
		if !strings.Contains(expl, s) {
			t.Errorf("explanation lacks %q: %s", s, expl)
		}
	}
	// Forgetting updates the statistics.
	if err := m.Forget(t.Context(), "fruit", ids[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Recall(t.Context(), "fruit", "apple", 1); err != nil {
		t.Fatal(err)
	}
	if docs, tokens := m.Stats(); docs != N-1 || tokens != total-4 {
		t.Fatalf("stats after forget %d docs %d tokens, want %d, %d", docs, tokens, N-1, total-4)
	}
}

func TestLocal_PendingTombstoneHidesHit(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{})
	ids := seed(t, m, "ns", "owl owl owl", "owl and a cat")
	hits, err := m.Recall(t.Context(), "ns", "owl", 1)
	if err != nil || len(hits) != 1 || hits[0].ID != ids[0] {
		t.Fatalf("before: %v, %v", hits, err)
	}
	m.AddPendingForget(ids[0])
	hits, err = m.Recall(t.Context(), "ns", "owl", 1)
	if err != nil || len(hits) != 1 || hits[0].ID != ids[1] {
		t.Fatalf("with a pending tombstone: %v, %v; want only %s", hits, err, ids[1])
	}
}

// TestLocal_TiesAreBrokenByID: among equal scores, the lower id wins, also
// where the cut at k falls inside the tie, so which memories are returned
// does not depend on insertion order or segment layout.
func TestLocal_TiesAreBrokenByID(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{})
	texts := make([]string, 12)
	for i := range texts {
		texts[i] = "the same lesson learned"
	}
	ids := seed(t, m, "tie", texts...)
	seed(t, m, "tie", "one lesson among many other words in a long text", "nothing related")
	sorted := slices.Sorted(slices.Values(ids))
	for _, k := range []int{1, 3, 11, 12} {
		hits, err := m.Recall(t.Context(), "tie", "same lesson", k)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.ID)
			if h.Score != hits[0].Score {
				t.Fatalf("k=%d: scores differ among identical texts: %+v", k, hits)
			}
		}
		if !slices.Equal(got, sorted[:k]) {
			t.Errorf("k=%d: got %v, want the %d lowest ids %v", k, got, k, sorted[:k])
		}
	}
	// Past the tie, the next best (a shorter text with one term) follows.
	hits, err := m.Recall(t.Context(), "tie", "same lesson", 13)
	if err != nil || len(hits) != 13 || hits[12].Text != "one lesson among many other words in a long text" {
		t.Fatalf("k=13: %v %+v", err, hits)
	}
}
