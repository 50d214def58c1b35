package projections_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// TestRebuild_WhileAppending rebuilds while goroutines append: an event
// committed between reading the head and clearing the tables must not
// vanish from the projections, and no append may fail.
func TestRebuild_WhileAppending(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	populate(t, rt, 100)
	const writers, appends, maxRebuilds = 4, 80, 20
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range writers {
		s, err := rt.NewUserSession(ctx, fmt.Sprint("writer ", w))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(s *session.Session) {
			defer wg.Done()
			for i := range appends {
				next, err := s.Append(ctx, session.Chunk{Role: "assistant", Content: fmt.Sprint("line ", i)})
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				s = next
			}
		}(s)
	}
	rebuilds := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for rebuilds < maxRebuilds {
		select {
		case <-done:
			break loop
		default:
		}
		if _, err := rt.Rebuild(ctx, nil); err != nil {
			t.Fatal(err)
		}
		rebuilds++
	}
	<-done
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d appends failed during %d rebuilds; first: %v", n, rebuilds, firstErr.Load())
	}
	// Every writer's session has all its chunks, and the projections equal
	// a rebuild from the log.
	rows, err := rt.Reader().Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, r := range rows {
		if r.Origin == "user" && r.Length == appends+1 {
			full++
		}
	}
	if full < writers {
		t.Fatalf("%d of %d writer sessions have all %d chunks after %d rebuilds", full, writers, appends+1, rebuilds)
	}
	rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("projections differ from a rebuild after %d rebuilds: %v", rebuilds, rep.Differences)
	}
	head, _ := rt.Store().Head(ctx)
	if rep.Seq != head.Seq {
		t.Fatalf("checked at seq %d, head is %d", rep.Seq, head.Seq)
	}
	t.Logf("%d rebuilds during %d appends", rebuilds, writers*appends)
}

func TestCheck(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{})
	if err != nil || !rep.OK() || rep.Seq != 0 || rep.Rows != 0 {
		t.Fatalf("empty store: %+v, %v", rep, err)
	}
	populate(t, rt, 200)
	rep, err = projections.Check(ctx, rt.Store(), projections.CheckOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("untouched store: %+v, %v", rep, err)
	}
	stored, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, rs := range stored {
		rows += int64(len(rs))
	}
	if head, _ := rt.Store().Head(ctx); rep.Seq != head.Seq || rep.Rows != rows || rows == 0 {
		t.Fatalf("checked %d rows at seq %d, head %d; the projections hold %d", rep.Rows, rep.Seq, head.Seq, rows)
	}
	// The read pool is query-only; edit through a connection of our own.
	db, err := sql.Open("sqlite", eventlog.DSN(filepath.Join(dir, rath.DBFile), false, "busy_timeout(10000)"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`UPDATE usage SET total_tokens = total_tokens + 1 WHERE seq = (SELECT min(seq) FROM usage)`,
		`DELETE FROM id_counters WHERE scope = (SELECT max(scope) FROM id_counters)`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	edited, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	rep, err = projections.Check(ctx, rt.Store(), projections.CheckOptions{Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 2 {
		t.Fatalf("differences = %v, want the usage row and the id counter", rep.Differences)
	}
	u, c := rep.Differences[0], rep.Differences[1]
	if u.Table != "usage" || len(u.Columns) != 1 || u.Stored == "" || u.Rebuilt == "" || !errors.Is(u, projections.ErrMismatch) {
		t.Fatalf("usage difference = %+v", u)
	}
	if c.Table != "id_counters" || c.Stored != "" || c.Rebuilt == "" {
		t.Fatalf("id counter difference = %+v", c)
	}
	// Check is read-only: the edits are still there.
	after, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(edited) {
		t.Fatal("Check changed the projections")
	}
	if _, err := rt.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{}); err != nil || !rep.OK() {
		t.Fatalf("after a rebuild: %+v, %v", rep, err)
	}
}
