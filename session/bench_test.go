package session_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/session"
)

// BenchmarkLoadAt reads the state of a session of 1,000 and 10,000 chunks
// at seqs spread over its last 1,000 events: from the nearest snapshot
// (LoadAt), with the runtime's chunk cache (the session was read once
// before) and without it (every state reads its chunks from the log), and,
// for comparison, by folding the stream from its start without the cache
// (how LoadAt worked before snapshots).
func BenchmarkLoadAt(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		ctx := context.Background()
		dir := b.TempDir()
		rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir, Store: rath.StoreOptions{Synchronous: "NORMAL"}})
		if err != nil {
			b.Fatal(err)
		}
		s, err := rt.NewUserSession(ctx, "start")
		if err != nil {
			b.Fatal(err)
		}
		for i := range n - 1 {
			if s, err = s.Append(ctx, user(fmt.Sprint("message ", i))); err != nil {
				b.Fatal(err)
			}
		}
		head, _ := rt.Store().Head(ctx)
		uncached, err := rath.OpenWith(ctx, rath.Options{Dir: dir, Store: rath.StoreOptions{Synchronous: "NORMAL", ChunkCacheBytes: -1}})
		if err != nil {
			b.Fatal(err)
		}
		for _, way := range []struct {
			name string
			load func(context.Context, string, int64) (*session.Session, error)
		}{
			{"snapshot,cached", rt.SessionAt},
			{"snapshot,uncached", uncached.SessionAt},
			{"fold,uncached", func(ctx context.Context, id string, seq int64) (*session.Session, error) {
				return session.LoadAtByFolding(ctx, uncached.Sessions(), id, seq)
			}},
		} {
			b.Run(fmt.Sprintf("chunks=%d/%s", n, way.name), func(b *testing.B) {
				// Read once: a cache holds what this process has read.
				if _, err := way.load(ctx, s.ID(), head.Seq); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := range b.N {
					if _, err := way.load(ctx, s.ID(), head.Seq-int64(i*7919%1000)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		uncached.Close()
		rt.Close()
	}
}
