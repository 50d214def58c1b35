package rath_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
	"golang.org/x/sys/unix"
)

func benchRuntime(b *testing.B) *rath.Runtime {
	b.Helper()
	rt, err := rath.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// sessionWith creates a session of n chunks of about 200 bytes each.
func sessionWith(b *testing.B, rt *rath.Runtime, n int) *session.Session {
	b.Helper()
	ctx := context.Background()
	s, err := rt.NewSession(ctx)
	if err != nil {
		b.Fatal(err)
	}
	const per = 1000
	for done := 0; done < n; {
		k := min(per, n-done)
		cs := make([]session.Chunk, k)
		for i := range cs {
			cs[i] = session.Chunk{Role: events.RoleAssistant, Author: "root.agent", Content: fmt.Sprintf("%06d %s", done+i, strings.Repeat("w", 190))}
		}
		if s, err = s.Append(ctx, cs...); err != nil {
			b.Fatal(err)
		}
		done += k
	}
	return s
}

func dbBytes(b *testing.B, rt *rath.Runtime) int64 {
	var pages, size int64
	db := rt.Store().DB()
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	return pages * size
}

// BenchmarkFork forks sessions of 10 and 10,000 chunks. Time and the
// database bytes added per fork must not depend on the chunk count.
func BenchmarkFork(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			rt := benchRuntime(b)
			s := sessionWith(b, rt, n)
			ctx := context.Background()
			before := dbBytes(b, rt)
			b.ResetTimer()
			for range b.N {
				if _, err := s.Fork(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(dbBytes(b, rt)-before)/float64(b.N), "db-bytes/fork")
		})
	}
}

// BenchmarkLoadSessionCold loads a 10,000-chunk session (a fork of a fork,
// so the base chain is walked) with no handle in memory, at three
// temperatures. "fresh-runtime" is the first read of a runtime opened just
// before it: no SQLite page cache, prepared statement or handle is warm,
// while the database stays in the OS page cache (a store reopened soon
// after its last use). "fresh-runtime,os-cache-dropped" also evicts the
// database files from the OS page cache first (posix_fadvise DONTNEED
// after an fsync), so the pages come from the disk (a virtual disk's host
// may still cache them). "runtime-reused" loads again and again through
// one runtime, every cache warm: the figure this benchmark reported before
// it was made cold, kept for comparison. Opening and closing are not timed.
func BenchmarkLoadSessionCold(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	id := func() string {
		rt, err := rath.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		s := sessionWith(b, rt, 9_990)
		f, _ := s.Fork(ctx)
		f, _ = f.Append(ctx, session.Chunk{Role: "user", Content: "more"})
		ff, _ := f.Fork(ctx)
		for i := range 9 {
			if ff, err = ff.Append(ctx, session.Chunk{Role: "user", Content: fmt.Sprint(i)}); err != nil {
				b.Fatal(err)
			}
		}
		return ff.ID()
	}()
	b.Run("runtime-reused", func(b *testing.B) {
		rt, err := rath.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		for range b.N {
			got, err := rt.Session(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if got.Len() != 10_000 {
				b.Fatalf("loaded %d chunks", got.Len())
			}
		}
	})
	for _, drop := range []bool{false, true} {
		name := "fresh-runtime"
		if drop {
			name = "fresh-runtime,os-cache-dropped"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				if drop {
					dropOSCache(b, dir)
				}
				rt, err := rath.Open(ctx, dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got, err := rt.Session(ctx, id)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if got.Len() != 10_000 {
					b.Fatalf("loaded %d chunks", got.Len())
				}
				if err := rt.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// dropOSCache evicts the store's database files from the OS page cache.
func dropOSCache(b *testing.B, dir string) {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(dir, rath.DBFile+"*"))
	if err != nil || len(files) == 0 {
		b.Fatalf("database files in %s: %v %v", dir, files, err)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		// Dirty pages are not evicted: write them out first.
		err = f.Sync()
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			b.Fatalf("drop %s from the OS cache: %v", name, err)
		}
	}
}

// BenchmarkAppendChunk appends one chunk per call through the session
// layer, projections included, from one goroutine.
func BenchmarkAppendChunk(b *testing.B) {
	rt := benchRuntime(b)
	ctx := context.Background()
	s, _ := rt.NewSession(ctx)
	c := session.Chunk{Role: events.RoleAssistant, Content: strings.Repeat("w", 200)}
	b.ResetTimer()
	for range b.N {
		var err error
		if s, err = s.Append(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRebuild replays a log of about 100,000 events into the SQL
// projections: 100 sessions of about 1,000 chunks, each placed, with a
// provider call, forked twice, the forks extended and merged.
func BenchmarkRebuild(b *testing.B) {
	rt := benchRuntime(b)
	ctx := context.Background()
	for range 100 {
		s := sessionWith(b, rt, 990)
		s, err := s.To(ctx, "local", "/work")
		if err != nil {
			b.Fatal(err)
		}
		s, err = s.Emit(ctx, nil, events.ProviderCalled{Session: s.ID(), Model: "m", Usage: events.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}})
		if err != nil {
			b.Fatal(err)
		}
		var branches [2]*session.Session
		for k := range branches {
			f, err := s.Fork(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for i := range 3 {
				if f, err = f.Append(ctx, session.Chunk{Role: "assistant", Content: fmt.Sprint("branch ", k, i)}); err != nil {
					b.Fatal(err)
				}
			}
			branches[k] = f
		}
		if _, err := branches[0].Merge(ctx, branches[1]); err != nil {
			b.Fatal(err)
		}
	}
	head, _ := rt.Store().Head(ctx)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := rt.Rebuild(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(head.Seq)*float64(b.N)/time.Since(start).Seconds(), "events/s")
}
