package memory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/memory"
)

// Purging memories leaves their text in no file of the index directory,
// without a rebuild: the other memories still recall, as they did.
func TestLocal_PurgeLeavesNoTextInTheIndex(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{})
	const canary = "zqxcanaryvwq"
	var gone []string
	// Each round's recall waits for the indexer, so the memories land in
	// several segments, the canary's beside others'.
	for i := range 5 {
		gone = append(gone, seed(t, m, "notes", fmt.Sprintf("the erased user said %s in note %d", canary, i))...)
		seed(t, m, "notes", fmt.Sprintf("%s, round %d", corpus[i], i))
		seed(t, m, "other", corpus...)
		if _, err := m.Recall(t.Context(), "other", "release", 5); err != nil {
			t.Fatal(err)
		}
	}
	if n := storetest.CountInDir(t, indexDir(rt), canary); n == 0 {
		t.Fatal("the canary is in no file of the index before the purge: the test would prove nothing")
	}
	before := recallAll(t, m, "other")
	st, err := m.Purge(t.Context(), gone)
	if err != nil {
		t.Fatal(err)
	}
	if st.Deleted != len(gone) {
		t.Fatalf("purged %d memories, want %d", st.Deleted, len(gone))
	}
	if n := storetest.CountInDir(t, indexDir(rt), canary); n != 0 {
		t.Fatalf("after the purge the canary is %d times in the index directory", n)
	}
	sameHits(t, recallAll(t, m, "other"), before)
	hits, err := m.Recall(t.Context(), "notes", canary, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("the purged memories still recall: %v", hits)
	}
	hits, err = m.Recall(t.Context(), "notes", "staging database", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || !strings.Contains(hits[0].Text, "staging") {
		t.Fatalf("the other memories of the namespace no longer recall: %v", hits)
	}
}
