//go:build integration

package eventlog

import (
	"testing"
	"time"

	"github.com/gorath/rath/events"
)

// The builders of processes sharing a log take turns: a build after a
// commit that finds the tree moved by another process since its own last
// build stands by before its next (treeStandBy), so that the processes
// do not each build a few of the others' commits and read the tree's
// edge again every time. A builder that built last itself does not.
func TestPostgres_ABuilderOvertakenByAnotherStandsBy(t *testing.T) {
	ctx := t.Context()
	dsn := migratedPostgres(t)
	open := func() *Store {
		t.Helper()
		// LeaveTree: the builder builds only when asked, so the test
		// drives it (its goroutine waits on its channels meanwhile).
		s, err := Open(ctx, Options{DSN: dsn, LeaveTree: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	n := 0
	appendAndBuild := func(s *Store) {
		t.Helper()
		n++
		p := events.ChunkAppended{Session: "s", Index: int64(n), Chunk: events.Chunk{Role: "user", Content: "hello"}}
		if _, err := s.Append(ctx, "s", AnyVersion, p); err != nil {
			t.Fatal(err)
		}
		h, err := s.tree.build(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if h.Size != int64(n) {
			t.Fatalf("build after append %d: tree of %d leaves", n, h.Size)
		}
	}
	appendAndBuild(a)
	appendAndBuild(a)
	if !a.tree.idleUntil.IsZero() {
		t.Fatalf("a builder that built the tree last itself stands by until %s", a.tree.idleUntil)
	}
	appendAndBuild(b)
	appendAndBuild(a)
	if wait := time.Until(a.tree.idleUntil); wait <= treeCoalesce {
		t.Fatalf("a builder that found the tree moved by another waits %s after its next commit, want about %s", max(wait, treeCoalesce), treeStandBy)
	}
	if err := a.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := a.Verify(ctx, VerifyOptions{}); err != nil || rep.Tree.Size != int64(n) {
		t.Fatalf("verify: %+v, %v; want a tree of %d leaves", rep, err, n)
	}
}
