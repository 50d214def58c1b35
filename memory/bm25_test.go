package memory_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/memory"
)

// TestLocal_BM25 checks that recall scores are BM25 over the statistics
// Local keeps for the namespace searched: idf = ln(1 + (N-n+0.5)/(n+0.5))
// with N the namespace's memories and n those holding the term, tf =
// sqrt(freq) (bleve's variant), document length normalized by the
// namespace's mean token count.
func TestLocal_BM25(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{})
	ids := seed(t, m, "fruit",
		"apple apple banana",          // 3 tokens
		"banana cherry",               // 2 tokens
		"cherry date elderberry fig",  // 4 tokens
		"grape grape grape apple fig", // 5 tokens
	)
	// Another namespace is another corpus: it counts neither in N, n nor
	// the mean.
	seed(t, m, "other", "apple", "apple cherry")
	const N, total = 4, 3 + 2 + 4 + 5
	if docs, tokens := m.Stats(); docs != N+2 || tokens != total+3 {
		t.Fatalf("stats %d docs %d tokens, want %d, %d", docs, tokens, N+2, total+3)
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
		{ids[0], bm25(2, 3, 2)},
		{ids[3], bm25(1, 5, 2)},
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
	// avgdl is 14/4 rounded up; "apple" is in 2 of fruit's 4 memories.
	for _, s := range []string{"as per bm25 model", "avgFieldLength=4.000000", "idf(docFreq=2, maxDocs=4)"} {
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
	if docs, tokens := m.Stats(); docs != N+2-1 || tokens != total+3-4 {
		t.Fatalf("stats after forget %d docs %d tokens, want %d, %d", docs, tokens, N+2-1, total+3-4)
	}
	for _, c := range []struct {
		ns           string
		docs, tokens int64
	}{{"fruit", N - 1, total - 4}, {"other", 2, 3}, {"none", 0, 0}} {
		if docs, tokens := m.NamespaceStats(c.ns); docs != c.docs || tokens != c.tokens {
			t.Errorf("%s: %d docs %d tokens, want %d, %d", c.ns, docs, tokens, c.docs, c.tokens)
		}
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

// TestLocal_NamespacesAreSeparateCorpora: a namespace's terms are its own.
// A recall never sees another namespace's memories, even with the same
// words, and a word common elsewhere is rare (scores high) where it is
// rare. A query of stop words only matches nothing.
func TestLocal_NamespacesAreSeparateCorpora(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{})
	a := seed(t, m, "a", "kiwi tart", "plum cake", "pear pie")
	seed(t, m, "b", "kiwi kiwi", "kiwi jam", "kiwi tea", "kiwi salad")
	// Namespaces may hold the separator the index uses: still apart.
	seed(t, m, "a\x1fkiwi", "tart")
	hits, err := m.Recall(t.Context(), "a", "kiwi tart", 10)
	if err != nil || len(hits) != 1 || hits[0].ID != a[0] {
		t.Fatalf("recall in a = %+v, %v; want only %s", hits, err, a[0])
	}
	hits, err = m.Recall(t.Context(), "b", "kiwi", 10)
	if err != nil || len(hits) != 4 {
		t.Fatalf("recall in b = %+v, %v", hits, err)
	}
	// Each namespace's own statistics: "kiwi" is in all 4 memories of b,
	// in 1 of a's 3 (the other namespaces' 5 memories count in neither).
	for _, c := range []struct{ ns, want string }{{"b", "idf(docFreq=4, maxDocs=4)"}, {"a", "idf(docFreq=1, maxDocs=3)"}} {
		expl, err := m.Explain(t.Context(), c.ns, "kiwi")
		if err != nil || !strings.Contains(expl, c.want) {
			t.Errorf("explanation of kiwi in %s lacks %q: %s, %v", c.ns, c.want, expl, err)
		}
	}
	for _, q := range []string{"the and of", "   ", "?!"} {
		hits, err := m.Recall(t.Context(), "a", q, 10)
		if strings.TrimSpace(q) == "" {
			if !errors.Is(err, memory.ErrInvalid) {
				t.Errorf("recall %q: %v, want ErrInvalid", q, err)
			}
			continue
		}
		if err != nil || len(hits) != 0 {
			t.Errorf("recall %q = %+v, %v; want no hits", q, hits, err)
		}
	}
}
