package rath_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
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
// so the base chain is walked) from the store with no handle in memory.
func BenchmarkLoadSessionCold(b *testing.B) {
	rt := benchRuntime(b)
	ctx := context.Background()
	s := sessionWith(b, rt, 9_990)
	f, _ := s.Fork(ctx)
	f, _ = f.Append(ctx, session.Chunk{Role: "user", Content: "more"})
	ff, _ := f.Fork(ctx)
	var err error
	for i := range 9 {
		if ff, err = ff.Append(ctx, session.Chunk{Role: "user", Content: fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		got, err := rt.Session(ctx, ff.ID())
		if err != nil {
			b.Fatal(err)
		}
		if got.Len() != 10_000 {
			b.Fatalf("loaded %d chunks", got.Len())
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
