package session_test

import (
	"fmt"
	"testing"

	"github.com/gorath/rath/session"
)

// TestChunkCache_FollowsOtherWriters drives one session through a second
// Manager on the same store (another process, as far as the first can
// tell), with forks and merges sharing the first Manager's cached chunks,
// and a cache small enough to evict; every load through the caching
// Manager must equal a load through one that caches nothing.
func TestChunkCache_FollowsOtherWriters(t *testing.T) {
	for _, budget := range []int64{session.DefaultChunkCacheBytes, 4 << 10} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			ctx := t.Context()
			rt := MustOpen(t)
			a := session.NewManager(rt.Store(), rt.Reader(), session.WithChunkCache(budget))
			other := session.NewManager(rt.Store(), rt.Reader())
			plain := session.NewManager(rt.Store(), rt.Reader(), session.WithChunkCache(0))
			same := func(id string) {
				t.Helper()
				got, err := a.Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				want, err := plain.Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !equal(contents(got), contents(want)) || got.Version() != want.Version() {
					t.Fatalf("%s through the cache: v%d %v\nfrom the store: v%d %v", id, got.Version(), contents(got), want.Version(), contents(want))
				}
				for seq := int64(1); seq <= want.Version()*3; seq += 5 {
					g, gerr := a.LoadAt(ctx, id, seq)
					w, werr := plain.LoadAt(ctx, id, seq)
					if (gerr == nil) != (werr == nil) || (gerr == nil && !equal(contents(g), contents(w))) {
						t.Fatalf("%s at seq %d through the cache: %v %v; from the store: %v %v", id, seq, g, gerr, w, werr)
					}
				}
			}
			root, err := a.New(ctx, session.OriginUser, user("q"))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				if root, err = root.Append(ctx, assistant(fmt.Sprint("a", i))); err != nil {
					t.Fatal(err)
				}
			}
			same(root.ID())
			cached, _ := a.Load(ctx, root.ID())
			// A fork through the cached handle appends into the shared log.
			fork, err := cached.Fork(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if fork, err = fork.Append(ctx, user("fork's own")); err != nil {
				t.Fatal(err)
			}
			// Another process appends to the root.
			theirs, err := other.Load(ctx, root.ID())
			if err != nil {
				t.Fatal(err)
			}
			if _, err = theirs.Append(ctx, user("from elsewhere"), assistant("and more")); err != nil {
				t.Fatal(err)
			}
			same(root.ID())
			same(fork.ID())
			// A merge through the cached handles, then more writes both here
			// and elsewhere.
			cached, _ = a.Load(ctx, root.ID())
			merged, err := cached.Merge(ctx, fork)
			if err != nil {
				t.Fatal(err)
			}
			if _, err = cached.Append(ctx, user("here")); err != nil {
				t.Fatal(err)
			}
			theirs, _ = other.Load(ctx, root.ID())
			if _, err = theirs.Append(ctx, user("there")); err != nil {
				t.Fatal(err)
			}
			same(root.ID())
			same(merged.ID())
			same(fork.ID())
		})
	}
}
