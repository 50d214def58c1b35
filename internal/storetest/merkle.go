package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"golang.org/x/mod/sumdb/tlog"
)

// appendTen appends ten events to stream s, the fourth in run r1.
func appendTen(t testing.TB, s *events.Store) {
	t.Helper()
	for i := range 10 {
		ctx := t.Context()
		if i == 3 {
			ctx = events.ContextWithRun(ctx, events.RunRef{ID: "r1", Seed: "x"})
		}
		if _, err := s.Append(ctx, "s", events.AnyVersion, placed("s", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// Each edit of an event row or of the Merkle tree, made with SQL behind
// the store's back, is found at the seq it concerns.
func testMerkleTampering(t *testing.T, b Backend) {
	cases := []struct {
		name   string
		sql    []string
		seq    int64
		reason string
	}{
		{"payload", []string{`UPDATE events SET payload = replace(payload, '/w/4', '/w/40') WHERE seq = 5`}, 5, "altered"},
		{"stream", []string{`UPDATE events SET stream = 'other' WHERE seq = 3`}, 3, "altered"},
		{"version", []string{`UPDATE events SET version = version + 100 WHERE seq = 8`}, 8, "altered"},
		{"type_version", []string{`UPDATE events SET type_version = 2 WHERE seq = 2`}, 2, "altered"},
		{"run_id", []string{`UPDATE events SET run_id = 'r2' WHERE seq = 4`}, 4, "altered"},
		{"run_id to NULL", []string{`UPDATE events SET run_id = NULL WHERE seq = 4`}, 4, "altered"},
		{"salt swapped", []string{`UPDATE events SET salt = (SELECT salt FROM events WHERE seq = 7) WHERE seq = 6`}, 6, "altered"},
		{"salt deleted", []string{`UPDATE events SET salt = NULL WHERE seq = 2`}, 2, "salt"},
		{"hash column", []string{`UPDATE events SET hash = (SELECT hash FROM events WHERE seq = 1) WHERE seq = 9`}, 9, "altered"},
		{"deleted", []string{`DELETE FROM events WHERE seq = 5`}, 5, "missing"},
		{"reordered", []string{`UPDATE events SET seq = 0 WHERE seq = 3`, `UPDATE events SET seq = 3 WHERE seq = 4`, `UPDATE events SET seq = 4 WHERE seq = 0`}, 3, "altered"},
		{"tail deleted", []string{`DELETE FROM events WHERE seq = 10`}, 10, "missing"},
		// The node over the leaves of seqs 3 and 4 is stored with seq 4's.
		{"inner node of the tree", []string{fmt.Sprintf(`UPDATE tree_hashes SET hash = (SELECT hash FROM tree_hashes WHERE id = %d) WHERE id = %d`, tlog.StoredHashIndex(1, 0), tlog.StoredHashIndex(1, 1))}, 4, "tree"},
		// The node over the leaves of seqs 5 and 6 is stored with seq 6's.
		{"tree node deleted", []string{fmt.Sprintf(`DELETE FROM tree_hashes WHERE id = %d`, tlog.StoredHashIndex(1, 2))}, 6, "missing from the Merkle tree"},
		{"recorded tree head", []string{`UPDATE store_meta SET value = replace(value, '10:', '9:') WHERE key = 'merkle_head'`}, 10, "tree head"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := b.New(t)
			s := OpenStore(t, tg)
			appendTen(t, s)
			mustVerify(t, s)
			tg.DropGuards(t)
			for _, q := range tc.sql {
				if err := tg.Exec(t, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			rep, err := s.Verify(t.Context(), events.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Failure.Seq != tc.seq || !errors.Is(rep.Failure, events.ErrVerify) || !strings.Contains(rep.Failure.Reason, tc.reason) {
				t.Fatalf("verify = %v, want a failure at seq %d saying %q", rep.Failure, tc.seq, tc.reason)
			}
		})
	}
	// A truncated tail (events and tree alike) leaves a shorter log that is
	// consistent in itself: a tree head recorded earlier finds it.
	t.Run("truncated tail with a recorded tree head", func(t *testing.T) {
		tg := b.New(t)
		s := OpenStore(t, tg)
		appendTen(t, s)
		head := mustVerify(t, s).Tree
		seven, err := s.TreeHeadAt(t.Context(), 7)
		if err != nil {
			t.Fatal(err)
		}
		tg.DropGuards(t)
		for _, q := range []string{`DELETE FROM events WHERE seq > 7`, fmt.Sprintf(`DELETE FROM tree_hashes WHERE id >= %d`, tlog.StoredHashCount(7)),
			fmt.Sprintf(`UPDATE store_meta SET value = '%s' WHERE key = 'merkle_head'`, seven)} {
			if err := tg.Exec(t, q); err != nil {
				t.Fatal(err)
			}
		}
		mustVerify(t, s)
		rep, err := s.Verify(t.Context(), events.VerifyOptions{Tree: &head})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() || rep.Failure.Seq != 8 || !strings.Contains(rep.Failure.Reason, "truncated") {
			t.Fatalf("verify with the tree head = %v, want truncation at seq 8", rep.Failure)
		}
	})
}

// Every tree head the log had is a prefix of the next: inclusion proofs of
// every event and consistency proofs between every earlier head and the
// last one check with tlog, and the heads agree with Verify.
func testMerkleProofs(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	s := OpenStore(t, tg)
	var heads []events.TreeHead
	for i := range 21 {
		if _, err := s.Append(ctx, "s", events.AnyVersion, placed("s", i)); err != nil {
			t.Fatal(err)
		}
		h, err := s.TreeHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h.Size != int64(i+1) {
			t.Fatalf("tree size %d after %d appends", h.Size, i+1)
		}
		heads = append(heads, h)
	}
	last := heads[len(heads)-1]
	if got := mustVerify(t, s).Tree; got != last {
		t.Fatalf("verify's tree head %v, TreeHead %v", got, last)
	}
	for seq := int64(1); seq <= last.Size; seq++ {
		line, err := s.LeafLine(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(line, &fields); err != nil || strings.ContainsRune(string(line), '\n') || fields["seq"] != float64(seq) {
			t.Fatalf("leaf line %q of seq %d: %v", line, seq, err)
		}
		p, err := s.ProveInclusion(ctx, seq, last.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, last.Size, last.Root, seq-1, tlog.RecordHash(line)); err != nil {
			t.Fatalf("inclusion proof of seq %d: %v", seq, err)
		}
		if err := tlog.CheckRecord(p, last.Size, last.Root, seq-1, tlog.RecordHash(append(line, ' '))); err == nil {
			t.Fatalf("the inclusion proof of seq %d checks another line too", seq)
		}
	}
	for _, old := range heads {
		p, err := s.ProveConsistency(ctx, old.Size, last.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckTree(p, last.Size, last.Root, old.Size, old.Root); err != nil {
			t.Fatalf("consistency %d -> %d: %v", old.Size, last.Size, err)
		}
		if rep, err := s.Verify(ctx, events.VerifyOptions{Tree: &old}); err != nil || !rep.OK() {
			t.Fatalf("verify with the tree head %v = %+v, %v", old, rep, err)
		}
	}
	if _, err := s.ProveInclusion(ctx, 1, last.Size+1); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("a proof in a tree larger than the log = %v, want ErrInvalid", err)
	}
}
