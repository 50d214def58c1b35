package eventlog_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
	"golang.org/x/mod/sumdb/tlog"
)

// A log an older rath wrote (schema version 8, a hash chain, no salts and
// no tree) keeps verifying after migration: its chain becomes the tree's
// first leaves, built when the store is first opened, new events follow
// in the Merkle format, and proofs span both.
func TestMerkle_OldChainBecomesTheFirstLeaves(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	db := rawDB(t, path)
	if err := migrations.UpTo(ctx, db, 8); err != nil {
		t.Fatal(err)
	}
	old, err := eventlog.Open(ctx, eventlog.WithChainRows(eventlog.Options{Path: path, BlobThreshold: 64}))
	if err != nil {
		t.Fatal(err)
	}
	run := old.In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "x"}})
	if _, err := old.Append(ctx, "s", eventlog.NoStream, placed("s", "local")); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Append(ctx, "s", 1, placed("s", strings.Repeat("big ", 40))); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Append(ctx, "t", eventlog.NoStream, placed("t", "bwrap")); err != nil {
		t.Fatal(err)
	}
	oldHead, err := old.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()

	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Open(ctx, eventlog.Options{Path: path, BlobThreshold: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	migrated, err := s.TreeHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if migrated.Size != 3 {
		t.Fatalf("tree size after the first open = %d, want the 3 old events", migrated.Size)
	}
	line, err := s.LeafLine(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var chain2 string
	if err := db.QueryRow(`SELECT lower(hex(hash)) FROM events WHERE seq = 2`).Scan(&chain2); err != nil {
		t.Fatal(err)
	}
	if want := `{"chain":"` + chain2 + `","leaf":0,"seq":2}`; string(line) != want {
		t.Fatalf("leaf line of an old event = %s, want %s", line, want)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{Head: &oldHead, Tree: &migrated}); err != nil || !rep.OK() || rep.Events != 3 {
		t.Fatalf("verify after the migration = %+v, %v", rep, err)
	}
	for i := range 4 {
		if _, err := s.In(run.Scope()).Append(ctx, "u", int64(i), placed("u", "x"+strings.Repeat("x", 30*i))); err != nil {
			t.Fatal(err)
		}
	}
	var salted int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE salt IS NOT NULL`).Scan(&salted); err != nil || salted != 4 {
		t.Fatalf("%d salted events, want the 4 new ones (%v)", salted, err)
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{Head: &oldHead, Tree: &migrated})
	if err != nil || !rep.OK() || rep.Events != 7 {
		t.Fatalf("verify after new appends = %+v, %v", rep, err)
	}
	p, err := s.ProveConsistency(ctx, migrated.Size, rep.Tree.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(p, rep.Tree.Size, rep.Tree.Root, migrated.Size, migrated.Root); err != nil {
		t.Fatalf("consistency from the migrated tree: %v", err)
	}
	for seq := int64(1); seq <= rep.Tree.Size; seq++ {
		line, err := s.LeafLine(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.ProveInclusion(ctx, seq, rep.Tree.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, rep.Tree.Size, rep.Tree.Root, seq-1, tlog.RecordHash(line)); err != nil {
			t.Fatalf("inclusion of seq %d: %v", seq, err)
		}
	}
	// An edit of an old event is still found at its seq.
	mustExec(t, db, `DROP TRIGGER events_no_update`, `UPDATE events SET at = at + 1 WHERE seq = 1`)
	if rep, _ := s.Verify(ctx, eventlog.VerifyOptions{}); rep.OK() || rep.Failure.Seq != 1 {
		t.Fatalf("verify after editing an old event = %+v, want a failure at seq 1", rep.Failure)
	}
}

// LeafLine computes from an event and its salt the same line the store
// hashed: its payload commitment is SHA-256(salt || payload as appended),
// whether the row keeps the payload compact, whole, or in a blob, and the
// event's hash is the leaf hash (unkeyed) or its HMAC (keyed).
func TestMerkle_LeafLineOfAnEvent(t *testing.T) {
	for _, key := range []string{"", "k"} {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "rath.db")
		s := MustOpenStore(t, eventlog.Options{Path: path, BlobThreshold: 100, HMACKey: []byte(key)})
		run := s.In(eventlog.Scope{Run: events.RunRef{ID: "r\"1\n", Seed: "x"}})
		evs, err := run.AppendWrites(ctx,
			eventlog.Write{Stream: "sé\u2028ss", Expected: eventlog.NoStream, Events: []events.Payload{
				events.ChunkAppended{Session: "sé\u2028ss", Index: 0, Chunk: events.Chunk{Role: "user", Content: "hi <there> & \x01"}},
				placed("sé\u2028ss", strings.Repeat("long ", 40)),
			}})
		if err != nil {
			t.Fatal(err)
		}
		db := rawDB(t, path)
		for _, ev := range evs {
			var salt []byte
			if err := db.QueryRow(`SELECT salt FROM events WHERE seq = ?`, ev.Seq).Scan(&salt); err != nil {
				t.Fatal(err)
			}
			if len(salt) != eventlog.SaltSize {
				t.Fatalf("salt of seq %d is %d bytes", ev.Seq, len(salt))
			}
			line := eventlog.LeafLine(ev, salt)
			stored, err := s.LeafLine(ctx, ev.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if string(line) != string(stored) {
				t.Fatalf("LeafLine(event) = %s\nStore.LeafLine = %s", line, stored)
			}
			c := eventlog.PayloadCommitment(salt, ev.Payload)
			if !strings.Contains(string(line), `"payload":"`+hex.EncodeToString(c[:])+`"`) || strings.ContainsAny(string(line), "\n\u2028") {
				t.Fatalf("leaf line %s lacks the payload commitment or is not one line", line)
			}
			if leaf := tlog.RecordHash(line); ev.Hash != hex.EncodeToString(leaf[:]) {
				t.Fatalf("hash %s, leaf hash %x", ev.Hash, leaf)
			}
		}
		var head string
		if err := db.QueryRow(`SELECT value FROM store_meta WHERE key = 'merkle_head'`).Scan(&head); err != nil {
			t.Fatal(err)
		}
		if _, mac, _ := strings.Cut(head, " "); (mac != "") != (key != "") {
			t.Fatalf("tree head %q: a MAC with a key and none without (key %q)", head, key)
		}
		if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
			t.Fatalf("verify = %+v, %v", rep, err)
		}
	}
}

// Copying a log copies its salts and tree: the copy verifies with the
// same tree head.
func TestMerkle_CopyKeepsTheTree(t *testing.T) {
	ctx := t.Context()
	src := MustOpenStore(t, eventlog.Options{BlobThreshold: 64})
	for i := range 9 {
		if _, err := src.Append(ctx, "s", int64(i), placed("s", "y"+strings.Repeat("y", 10*i))); err != nil {
			t.Fatal(err)
		}
	}
	dst := MustOpenStore(t, eventlog.Options{})
	if _, err := dst.CopyFrom(ctx, src, nil); err != nil {
		t.Fatal(err)
	}
	a, err := src.TreeHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := dst.Verify(ctx, eventlog.VerifyOptions{Tree: &a})
	if err != nil || !rep.OK() || rep.Tree != a {
		t.Fatalf("verify of the copy = %+v, %v; source tree %v", rep, err, a)
	}
	if _, err := dst.Append(ctx, "s", 9, placed("s", "after")); err != nil {
		t.Fatal(err)
	}
	if rep, err := dst.Verify(ctx, eventlog.VerifyOptions{Tree: &a}); err != nil || !rep.OK() || rep.Tree.Size != 10 {
		t.Fatalf("verify of the copy after an append = %+v, %v", rep, err)
	}
}

var _ = sql.ErrNoRows
var _ context.Context

// With an HMAC key, a log truncated with its tree and tree head recomputed
// (all an attacker without the key can do) fails verification: the head's
// MAC does not match. Without a key the same log verifies, and only a
// tree head kept elsewhere finds it.
func TestMerkle_KeyedHeadCatchesATruncation(t *testing.T) {
	for _, key := range []string{"k", ""} {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "rath.db")
		s := MustOpenStore(t, eventlog.Options{Path: path, HMACKey: []byte(key)})
		for i := range 6 {
			if _, err := s.Append(ctx, "s", int64(i), placed("s", "b"+strings.Repeat("x", i))); err != nil {
				t.Fatal(err)
			}
		}
		four, err := s.TreeHeadAt(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		db := rawDB(t, path)
		mustExec(t, db, `DROP TRIGGER events_no_delete`, `DROP TRIGGER tree_hashes_no_delete`, `DELETE FROM events WHERE seq > 4`)
		if _, err := db.Exec(`DELETE FROM tree_hashes WHERE id >= ?`, tlog.StoredHashCount(4)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE store_meta SET value = ? WHERE key = 'merkle_head'`, four.String()); err != nil {
			t.Fatal(err)
		}
		rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if key == "" && !rep.OK() {
			t.Fatalf("unkeyed, truncated consistently: %v", rep.Failure)
		}
		if key != "" && (rep.OK() || !strings.Contains(rep.Failure.Reason, "HMAC")) {
			t.Fatalf("keyed, truncated without the key: %+v, want an HMAC failure", rep.Failure)
		}
	}
}
