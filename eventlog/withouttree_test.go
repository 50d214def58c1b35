package eventlog_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gorath/rath/eventlog"
)

// A store without a tree appends and reads as any other, keeps no tree
// hashes, and does not pass for a verified log.
func TestStore_WithoutTree(t *testing.T) {
	ctx := t.Context()
	name, keeper := inMemoryDatabase(t, "notree")
	s, err := eventlog.Open(ctx, eventlog.Options{Path: name, InMemory: true, WithoutTree: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20 {
		if _, err := s.Append(ctx, "a", int64(i), placed("a", strconv.Itoa(i))); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	evs, err := s.ReadStream(ctx, "a", 1)
	if err != nil || len(evs) != 20 || evs[19].Version != 20 {
		t.Fatalf("read %d events, %v", len(evs), err)
	}
	if head, err := s.Head(ctx); err != nil || head.Seq != 20 {
		t.Fatalf("head %+v, %v", head, err)
	}
	var n int
	if err := keeper.QueryRowContext(ctx, `SELECT count(*) FROM tree_hashes`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tree hashes (%v), want none", n, err)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err == nil && rep.OK() {
		t.Fatal("a log without its tree verified")
	}

	// Only an in-memory store may go without.
	path := filepath.Join(t.TempDir(), "rath.db")
	migrate(t, path)
	if _, err := eventlog.Open(ctx, eventlog.Options{Path: path, WithoutTree: true}); err == nil || errors.Is(err, eventlog.ErrClosed) {
		t.Fatalf("a file store opened without a tree: %v", err)
	}
}
