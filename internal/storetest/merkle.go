package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"golang.org/x/mod/sumdb/tlog"
)

// appendTen appends ten events to stream s, the fourth in run r1.
func appendTen(t testing.TB, s *eventlog.Store) {
	t.Helper()
	for i := range 10 {
		var sc eventlog.Scope
		if i == 3 {
			sc.Run = events.RunRef{ID: "r1", Seed: "x"}
		}
		if _, err := s.In(sc).Append(t.Context(), "s", eventlog.AnyVersion, placed("s", i)); err != nil {
			t.Fatal(err)
		}
		// Each append's tree hashes in a row of their own, which the
		// tampering cases edit (PostgreSQL builds the tree after the
		// commits, a row a build).
		if err := s.SyncTree(t.Context()); err != nil {
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
			MustVerify(t, s)
			tg.DropGuards(t)
			for _, q := range tc.sql {
				if err := tg.Exec(t, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Failure.Seq != tc.seq || !errors.Is(rep.Failure, eventlog.ErrVerify) || !strings.Contains(rep.Failure.Reason, tc.reason) {
				t.Fatalf("verify = %v, want a failure at seq %d saying %q", rep.Failure, tc.seq, tc.reason)
			}
		})
	}
	t.Run("packed tree rows", func(t *testing.T) { testPackedTreeRows(t, b) })
	t.Run("rows of one hash, then packed rows", func(t *testing.T) { testOneHashRowsThenPacked(t, b) })
	// A truncated tail (events and tree alike) leaves a shorter log that is
	// consistent in itself: a tree head recorded earlier finds it.
	t.Run("truncated tail with a recorded tree head", func(t *testing.T) {
		tg := b.New(t)
		s := OpenStore(t, tg)
		appendTen(t, s)
		head := MustVerify(t, s).Tree
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
		MustVerify(t, s)
		rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{Tree: &head})
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
	var heads []eventlog.TreeHead
	for i := range 21 {
		if _, err := s.Append(ctx, "s", eventlog.AnyVersion, placed("s", i)); err != nil {
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
	if got := MustVerify(t, s).Tree; got != last {
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
		if rep, err := s.Verify(ctx, eventlog.VerifyOptions{Tree: &old}); err != nil || !rep.OK() {
			t.Fatalf("verify with the tree head %v = %+v, %v", old, rep, err)
		}
	}
	if _, err := s.ProveInclusion(ctx, 1, last.Size+1); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("a proof in a tree larger than the log = %v, want ErrInvalid", err)
	}
}

// One commit of ten events stores its eight tree hashes as one row
// (eventlog/treerows.go); an edit inside that row is found at the seq whose
// leaf completes the altered node, and a row cut short or reaching past
// the log's tail is found too.
func testPackedTreeRows(t *testing.T, b Backend) {
	// The row's hashes, in order: the nodes completed by the leaves of
	// seqs 2, 4 (two), 6, 8 (three) and 10.
	cases := []struct {
		name   string
		edit   func(row []byte) []byte
		seq    int64
		reason string
	}{
		{"a hash inside the row", func(row []byte) []byte { row[2*tlog.HashSize] ^= 1; return row }, 4, "tree"},
		{"the row cut short", func(row []byte) []byte { return row[:len(row)-tlog.HashSize] }, 10, "missing from the Merkle tree"},
		{"the row reaching past the tail", func(row []byte) []byte { return append(row, row[:tlog.HashSize]...) }, 11, "past the log's last seq"},
		// Not whole hashes: found at the row's first node, seq 2's.
		{"the row not whole hashes", func(row []byte) []byte { return row[:len(row)-1] }, 2, "tree"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := b.New(t)
			s := OpenStore(t, tg)
			ps := make([]events.Payload, 10)
			for i := range ps {
				ps[i] = placed("s", i)
			}
			if _, err := s.Append(t.Context(), "s", eventlog.NoStream, ps...); err != nil {
				t.Fatal(err)
			}
			MustVerify(t, s)
			var rows int
			var id int64
			var row []byte
			if err := s.DB().QueryRowContext(t.Context(), `SELECT COUNT(*) FROM tree_hashes`).Scan(&rows); err != nil || rows != 1 {
				t.Fatalf("%d tree_hashes rows (%v) for one commit, want 1", rows, err)
			}
			if err := s.DB().QueryRowContext(t.Context(), `SELECT id, hash FROM tree_hashes`).Scan(&id, &row); err != nil || len(row) != 8*tlog.HashSize {
				t.Fatalf("row of %d bytes (%v), want 8 hashes", len(row), err)
			}
			literal := byteaLiteral(tg, tc.edit(row))
			tg.DropGuards(t)
			if err := tg.Exec(t, fmt.Sprintf(`UPDATE tree_hashes SET hash = %s WHERE id = %d`, literal, id)); err != nil {
				t.Fatal(err)
			}
			rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Failure.Seq != tc.seq || !strings.Contains(rep.Failure.Reason, tc.reason) {
				t.Fatalf("verify = %v, want a failure at seq %d saying %q", rep.Failure, tc.seq, tc.reason)
			}
		})
	}
}

// A store whose tree was written a hash a row (before schema version 14)
// keeps verifying and proving once packed rows follow those rows.
func testOneHashRowsThenPacked(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	s := OpenStore(t, tg)
	appendN := func(n int) {
		t.Helper()
		ps := make([]events.Payload, n)
		for i := range ps {
			ps[i] = placed("s", i)
		}
		if _, err := s.Append(ctx, "s", eventlog.AnyVersion, ps...); err != nil {
			t.Fatal(err)
		}
	}
	appendN(10)
	// (On PostgreSQL the tree is built after the commit.)
	if err := s.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	var row []byte
	if err := s.DB().QueryRowContext(ctx, `SELECT hash FROM tree_hashes`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	tg.DropGuards(t)
	if err := tg.Exec(t, `DELETE FROM tree_hashes`); err != nil {
		t.Fatal(err)
	}
	k := 0
	for n := int64(0); n < 10; n++ {
		for id := tlog.StoredHashIndex(0, n) + 1; id < tlog.StoredHashCount(n+1); id++ {
			literal := byteaLiteral(tg, row[k*tlog.HashSize:(k+1)*tlog.HashSize])
			if err := tg.Exec(t, fmt.Sprintf(`INSERT INTO tree_hashes (id, hash) VALUES (%d, %s)`, id, literal)); err != nil {
				t.Fatal(err)
			}
			k++
		}
	}
	if k != 8 {
		t.Fatalf("%d hashes unpacked, want 8", k)
	}
	ten := MustVerify(t, s).Tree
	appendN(13)
	for range 3 {
		appendN(1)
	}
	last := MustVerify(t, s).Tree
	if last.Size != 26 {
		t.Fatalf("tree of %d leaves, want 26", last.Size)
	}
	for seq := int64(1); seq <= last.Size; seq++ {
		line, err := s.LeafLine(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.ProveInclusion(ctx, seq, last.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, last.Size, last.Root, seq-1, tlog.RecordHash(line)); err != nil {
			t.Fatalf("inclusion proof of seq %d: %v", seq, err)
		}
	}
	p, err := s.ProveConsistency(ctx, ten.Size, last.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(p, last.Size, last.Root, ten.Size, ten.Root); err != nil {
		t.Fatalf("consistency 10 -> %d: %v", last.Size, err)
	}
}

// byteaLiteral is b as an SQL literal of tg's database.
func byteaLiteral(tg Target, b []byte) string {
	if tg.DSN != "" {
		return fmt.Sprintf(`'\x%x'::bytea`, b)
	}
	return fmt.Sprintf(`X'%x'`, b)
}
