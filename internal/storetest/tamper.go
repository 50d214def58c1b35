package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"golang.org/x/mod/sumdb/tlog"
)

// The conformance cases of tamper evidence: the database refuses to change
// the log, and verify finds what is changed anyway (a payload, a row, a
// truncated tail, a chain written under another key).

func testTriggers(t *testing.T, b Backend) {
	tg := b.New(t)
	s := OpenStore(t, tg)
	if _, err := s.Append(t.Context(), "s", eventlog.NoStream, placed("s", 1)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE events SET payload = '{}'`, `DELETE FROM events`} {
		if err := tg.Exec(t, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: err = %v, want the append-only refusal", q, err)
		}
	}
	MustVerify(t, s)
}

func appendN(t testing.TB, s *eventlog.Store, stream string, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.Append(t.Context(), stream, eventlog.AnyVersion, placed(stream, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// An edited payload, stream, hash or blob is found at its seq.
func testTampering(t *testing.T, b Backend) {
	cases := []struct {
		name, sql string
		seq       int64
	}{
		{"payload", `UPDATE events SET payload = replace(payload, '/w/4', '/w/40') WHERE seq = 5`, 5},
		{"stream", `UPDATE events SET stream = 'other' WHERE seq = 3`, 3},
		// (A hash whose first byte is 'Z' already, one in 256 on SQLite's
		// raw bytes, gets a 'Y': the edit must change the row.)
		{"hash", `UPDATE events SET hash = CASE WHEN CAST(substr(hash, 1, 1) AS TEXT) = 'Z' THEN 'Y' ELSE 'Z' END || substr(hash, 2) WHERE seq = 7`, 7},
		{"at", `UPDATE events SET at = at + 1 WHERE seq = 2`, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := b.New(t)
			s := OpenStore(t, tg)
			appendN(t, s, "s", 10)
			MustVerify(t, s)
			tg.DropGuards(t)
			if err := tg.Exec(t, tc.sql); err != nil {
				t.Fatal(err)
			}
			rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Failure.Seq != tc.seq || !errors.Is(rep.Failure, eventlog.ErrVerify) {
				t.Fatalf("verify = %v, want a failure at seq %d", rep.Failure, tc.seq)
			}
		})
	}
	t.Run("blob", func(t *testing.T) {
		tg := b.New(t)
		s := OpenStore(t, tg)
		big := strings.Repeat("y", 40<<10)
		if _, err := s.Append(t.Context(), "s", eventlog.NoStream, &events.SessionPlaced{Session: "s", Backend: "local", Spec: big}); err != nil {
			t.Fatal(err)
		}
		tg.DropGuards(t)
		if err := tg.Exec(t, `UPDATE blobs SET size = size + 1`); err != nil {
			t.Fatal(err)
		}
		if err := tg.Exec(t, `DELETE FROM blobs`); err != nil {
			t.Fatal(err)
		}
		rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() || rep.Failure.Seq != 1 {
			t.Fatalf("verify after the blob was deleted = %v, want a failure at seq 1", rep.Failure)
		}
	})
}

// Deleting the newest events leaves a valid chain that is shorter: only a
// head kept elsewhere finds it, and it must.
func testTruncation(t *testing.T, b Backend) {
	tg := b.New(t)
	s := OpenStore(t, tg)
	// One append at a time into the tree, so the attacker below can cut
	// it at an append's end (PostgreSQL builds the tree after the
	// commits, a row of hashes a build).
	for i := range 10 {
		if _, err := s.Append(t.Context(), "s", eventlog.AnyVersion, placed("s", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.SyncTree(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	head := MustVerify(t, s).Head
	eight, err := s.TreeHeadAt(t.Context(), 8)
	if err != nil {
		t.Fatal(err)
	}
	tg.DropGuards(t)
	if err := tg.Exec(t, `DELETE FROM events WHERE seq > 8`); err != nil {
		t.Fatal(err)
	}
	// The Merkle tree keeps the leaves of the deleted events: deleting the
	// events alone is found at the first one.
	rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Failure.Seq != 9 {
		t.Fatalf("verify after deleting the tail's events = %v, want a failure at seq 9", rep.Failure)
	}
	// So does the recorded tree head; the attacker truncates the tree and
	// rewrites the head too.
	for _, q := range []string{fmt.Sprintf(`DELETE FROM tree_hashes WHERE id >= %d`, tlog.StoredHashCount(8)),
		fmt.Sprintf(`UPDATE store_meta SET value = '%s' WHERE key = 'merkle_head'`, eight)} {
		if err := tg.Exec(t, q); err != nil {
			t.Fatal(err)
		}
	}
	MustVerify(t, s)
	rep, err = s.Verify(t.Context(), eventlog.VerifyOptions{Head: &head})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Failure.Seq != 10 || !strings.Contains(rep.Failure.Reason, "truncated") {
		t.Fatalf("verify with the old head = %v, want truncation at 10", rep.Failure)
	}
}

// A keyed chain verifies with its key, and refuses writers and verifiers
// with another key or none.
func testKeyedChains(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	s := OpenStore(t, tg, []byte("k1")...)
	appendN(t, s, "s", 3)
	MustVerify(t, s)
	for _, k := range []string{"k2", ""} {
		other := OpenStore(t, tg, []byte(k)...)
		_, err := other.Append(ctx, "s", eventlog.AnyVersion, placed("s", 9))
		if !errors.Is(err, eventlog.ErrKey) {
			t.Fatalf("append with key %q: %v, want ErrKey", k, err)
		}
		rep, err := other.Verify(ctx, eventlog.VerifyOptions{})
		if err != nil || rep.OK() {
			t.Fatalf("verify with key %q: %+v, %v; want a failure", k, rep, err)
		}
	}
	MustVerify(t, s)
}
