package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// The state at a seq read from a snapshot and the few events after it
// equals the state folded from the stream's first event, at every seq,
// for a root, a fork and a merge with chunks, placements and usage
// across several snapshots.
func TestLoadAt_SnapshotsEqualTheFold(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	grow := func(s *session.Session, n int, tag string) *session.Session {
		t.Helper()
		var err error
		for i := range n {
			switch {
			case i%37 == 5:
				s, err = s.To(ctx, "bwrap", fmt.Sprintf("/w/%s/%d", tag, i))
			case i%11 == 3:
				s, err = s.Emit(ctx, nil, events.ProviderCalled{Session: s.ID(), Model: "m", Usage: events.Usage{PromptTokens: int64(i), CompletionTokens: 2, TotalTokens: int64(i) + 2}})
			default:
				s, err = s.Append(ctx, user(fmt.Sprintf("%s %d", tag, i)))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	root, err := rt.NewUserSession(ctx, "start")
	if err != nil {
		t.Fatal(err)
	}
	root = grow(root, 300, "root")
	fork, err := root.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fork = grow(fork, 200, "fork")
	root = grow(root, 60, "root2")
	merged, err := root.Merge(ctx, fork)
	if err != nil {
		t.Fatal(err)
	}
	grow(merged, 140, "merged")
	head, _ := rt.Store().Head(ctx)
	var snaps int
	rt.Store().DB().Get(&snaps, `SELECT COUNT(*) FROM session_snapshots`)
	if snaps < 4 {
		t.Fatalf("%d snapshots; the test needs several", snaps)
	}
	describe := func(s *session.Session, err error) string {
		if err != nil {
			return fmt.Sprintf("error %v", errors.Is(err, session.ErrNotFound))
		}
		return fmt.Sprintf("v%d %v %+v %v", s.Version(), s.Placement(), s.Usage(), contents(s))
	}
	for seq := int64(1); seq <= head.Seq; seq += 7 {
		for _, id := range []string{root.ID(), fork.ID(), merged.ID()} {
			want := describe(session.LoadAtByFolding(ctx, rt.Sessions(), id, seq))
			got := describe(rt.SessionAt(ctx, id, seq))
			if got != want {
				t.Fatalf("%s at seq %d:\n got  %.300s\n want %.300s", id, seq, got, want)
			}
		}
	}
}
