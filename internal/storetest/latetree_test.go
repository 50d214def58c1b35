package storetest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/internal/storetest"
)

// On PostgreSQL the Merkle tree is built after the commit, outside the
// append's transaction: an append does not wait for anything the tree's
// writes lock. Here another session holds the tree head's row (as a
// stalled builder would): appends still commit, the tree lags, and once
// the row is free a reader of the tree (TreeHead) brings it up to the
// log's end, which Verify then finds whole.
func TestPostgres_AnAppendDoesNotWaitForTheTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	s := storetest.OpenStore(t, tg)
	if _, err := s.Append(ctx, "s", eventlog.AnyVersion, placedS(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", tg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	var head string
	if err := holder.QueryRowContext(ctx, `SELECT value FROM store_meta WHERE key = 'merkle_head' FOR UPDATE`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	// Bounded well below the busy timeout, so an append that waited for
	// the row fails here rather than passing late.
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		if _, err := s.Append(actx, "s", eventlog.AnyVersion, placedS(i)); err != nil {
			t.Fatalf("append %d while the tree head's row is held: %v", i, err)
		}
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	h, err := s.TreeHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != 4 {
		t.Fatalf("tree head %v, want the 4 events appended", h)
	}
	if rep := storetest.MustVerify(t, s); rep.NotInTree != 0 || rep.Tree != h {
		t.Fatalf("verify: tree %v with %d events not in it, want %v and none", rep.Tree, rep.NotInTree, h)
	}
}

// Two processes' builders take turns on one tree. One that finds the tree
// built past its own by the other, with nothing left to add, must not
// keep its old edge as if it were the new head's: its next build, after
// its own append, failed with "the stored head does not match its stored
// hashes", and so did a process opening the store then.
func TestPostgres_ABuilderOvertakenByAnotherBuildsOn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	a, b := storetest.OpenStore(t, tg), storetest.OpenStore(t, tg)
	appendTo := func(s *eventlog.Store, i int) {
		t.Helper()
		if _, err := s.Append(ctx, "s", eventlog.AnyVersion, placedS(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		appendTo(a, i)
	}
	if err := a.SyncTree(ctx); err != nil { // a's builder holds the edge of 3 leaves
		t.Fatal(err)
	}
	// a's append pokes its builder, which waits a moment to build the
	// commits of that while together; b's builder builds the 4th leaf
	// first, so a's finds nothing to add.
	appendTo(a, 3)
	if err := b.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	appendTo(a, 4)
	if err := a.SyncTree(ctx); err != nil {
		t.Fatalf("a's build of the 5th leaf on b's tree: %v", err)
	}
	h, err := a.TreeHead(ctx)
	if err != nil || h.Size != 5 {
		t.Fatalf("tree head %+v, %v; want 5 leaves", h, err)
	}
	storetest.MustVerify(t, b)
}
