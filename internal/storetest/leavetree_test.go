package storetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// A store opened with LeaveTree (a process that appends and exits, such
// as "rath submit") opens no connection for the tree builder and leaves
// the tree over its commits where it was; it builds it only when read
// here. The next store opened the usual way builds it at Open, and a
// store with an AfterCommit hook (a checkpoint signer) builds as usual.
func TestPostgres_LeaveTreeLeavesTheTreeToTheNextBuilder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	stored := func(t *testing.T) (head string, end int64) {
		t.Helper()
		db, err := eventlog.OpenPostgresReadPool(tg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM store_meta WHERE key = 'merkle_head'), ''), COALESCE((SELECT max(seq) FROM events), 0)`).Scan(&head, &end); err != nil {
			t.Fatal(err)
		}
		return head, end
	}
	sizeOf := func(t *testing.T, head string) int64 {
		t.Helper()
		if head == "" {
			return 0
		}
		h, err := eventlog.ParseTreeHead(head)
		if err != nil {
			t.Fatalf("tree head %q: %v", head, err)
		}
		return h.Size
	}
	appendSome := func(t *testing.T, s *eventlog.Store, stream string) {
		t.Helper()
		for i := range 3 {
			p := events.ChunkAppended{Session: stream, Index: int64(i), Chunk: events.Chunk{Role: "user", Content: fmt.Sprint("hello ", i)}}
			if _, err := s.Append(ctx, stream, eventlog.AnyVersion, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	// treeConns counts the tree builders' connections to the database
	// (each names itself), waiting a while for the count to be want: a
	// closed store's backend leaves pg_stat_activity a moment after its
	// connection closes. (A count of all connections depended on when it
	// was taken: the others open as the store uses them.)
	treeConns := func(t *testing.T, want int) int {
		t.Helper()
		db, err := eventlog.OpenPostgresReadPool(tg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, eventlog.AppTree).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == want || time.Now().After(deadline) {
				return n
			}
		}
	}

	// A store opened the usual way, before anything is appended, has
	// its tree builder's connection.
	usual, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN})
	if err != nil {
		t.Fatal(err)
	}
	if n := treeConns(t, 1); n != 1 {
		t.Fatalf("%d tree builder connections with the usual store open, want 1", n)
	}
	usual.Close()
	leaving, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, LeaveTree: true})
	if err != nil {
		t.Fatal(err)
	}
	appendSome(t, leaving, "s-leave")
	// The tree builder's connection is not opened.
	if n := treeConns(t, 0); n != 0 {
		t.Errorf("%d tree builder connections open with LeaveTree after appends, want none", n)
	}
	if err := leaving.Close(); err != nil {
		t.Fatal(err)
	}
	head, end := stored(t)
	if end != 3 || sizeOf(t, head) != 0 {
		t.Fatalf("after a store that leaves the tree closed: tree %q over a log of %d, want no tree over 3", head, end)
	}

	// Read here, the tree is built here.
	reading, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, LeaveTree: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := reading.TreeHead(ctx); err != nil || h.Size != 3 {
		t.Fatalf("TreeHead of a store that leaves the tree: %v, %v; want the tree over 3 built", h, err)
	}
	appendSome(t, reading, "s-read")
	if err := reading.Close(); err != nil {
		t.Fatal(err)
	}
	if head, end := stored(t); end != 6 || sizeOf(t, head) != 3 {
		t.Fatalf("tree %q over a log of %d, want the tree over 3 left as read", head, end)
	}

	// A signer's store builds after its commits, LeaveTree or not.
	var heads []int64
	signing, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, LeaveTree: true, AfterCommit: func(c eventlog.Commit) { heads = append(heads, c.Head.Size) }})
	if err != nil {
		t.Fatal(err)
	}
	appendSome(t, signing, "s-sign")
	if err := signing.Close(); err != nil {
		t.Fatal(err)
	}
	if head, end := stored(t); end != 9 || sizeOf(t, head) != 9 || len(heads) == 0 || heads[len(heads)-1] != 9 {
		t.Fatalf("with AfterCommit: tree %q over a log of %d, heads told %v; want the tree over 9 built and told", head, end, heads)
	}

	// The next store opened the usual way builds what was left, at Open.
	leaving, err = eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, LeaveTree: true})
	if err != nil {
		t.Fatal(err)
	}
	appendSome(t, leaving, "s-leave2")
	leaving.Close()
	usual, err = eventlog.Open(context.WithoutCancel(ctx), eventlog.Options{DSN: tg.DSN})
	if err != nil {
		t.Fatal(err)
	}
	defer usual.Close()
	if head, end := stored(t); end != 12 || sizeOf(t, head) != 12 {
		t.Fatalf("after a usual Open: tree %q over a log of %d, want it built over 12", head, end)
	}
	rep, err := usual.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}
