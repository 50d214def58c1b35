package rath_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring/keyringtest"
)

// BenchmarkErase erases one user at a time from a sealed store of 1M
// events and 10k users (a run of 100 events each), built once: an
// erasure reaches the user's runs through indexes, so its time does not
// grow with the store. p99-ms is the 99th percentile of one erasure.
func BenchmarkErase(b *testing.B) {
	const subjects, perSubject = 10_000, 100
	ctx := b.Context()
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: b.TempDir(), KEK: keyringtest.KEK(b), Store: rath.StoreOptions{Synchronous: "OFF"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	text := strings.Repeat("what the user said ", 8)
	for i := range subjects {
		run, sess := fmt.Sprintf("run-%05d", i), fmt.Sprintf("s-%05d", i)
		subject := fmt.Sprintf("user:u%05d", i)
		sctx := events.ContextWithSubject(ctx, subject)
		evs := make([]events.Payload, 0, perSubject-1)
		evs = append(evs, events.SessionCreated{Session: sess, Origin: "user", Chunks: []events.Chunk{{Role: "user", Content: text}}})
		for c := 1; c < perSubject-1; c++ {
			evs = append(evs, events.ChunkAppended{Session: sess, Index: int64(c), Chunk: events.Chunk{Role: "assistant", Content: text}})
		}
		_, err := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: run, Seed: run}}).AppendWrites(sctx,
			eventlog.Write{Stream: run, Expected: eventlog.NoStream, Events: []events.Payload{events.RunStarted{Run: run, Workflow: "w", InputSession: sess, Seed: run, Subject: subject}}},
			eventlog.Write{Stream: sess, Expected: eventlog.NoStream, Events: evs})
		if err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	i := 0
	for b.Loop() {
		if i == subjects {
			b.Fatalf("more than %d erasures", subjects)
		}
		start := time.Now()
		if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: fmt.Sprintf("user:u%05d", i), By: "bench", Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
