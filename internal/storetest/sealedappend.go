package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// CompareSealedAppends appends typical chunks from 16 goroutines, one
// subject each, to plain (a store that seals nothing) and to sealed (one
// that seals under the subjects' keys) in alternating rounds, the order
// of the two changing every round: on a shared machine both then see the
// same spells of load, which two benchmarks run one after the other do
// not. It reports the mean time of an append to each and their ratio,
// sealed/plain.
func CompareSealedAppends(b *testing.B, plain, sealed *eventlog.Store) {
	const goroutines, perRound = 16, 25
	stores := [2]*eventlog.Store{plain, sealed}
	var took [2]time.Duration
	rounds := 0
	for b.Loop() {
		for j := range stores {
			k := (rounds + j) % len(stores)
			start := time.Now()
			appendRound(b, stores[k], goroutines, perRound)
			took[k] += time.Since(start)
		}
		rounds++
	}
	n := float64(rounds * goroutines * perRound)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "plain-ns/append")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "sealed-ns/append")
	b.ReportMetric(float64(took[1])/float64(took[0]), "sealed/plain")
}

// appendRound makes perRound appends from each of n goroutines, each to
// a stream of its own.
func appendRound(b *testing.B, s *eventlog.Store, n, perRound int) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			stream := fmt.Sprintf("g%d", g)
			for i := range perRound {
				p := events.ChunkAppended{Session: stream, Index: int64(i), Chunk: events.Chunk{
					Role: "assistant", Author: "root.agent", Content: strings.Repeat("lorem ipsum ", 20)}}
				if _, err := s.Append(b.Context(), stream, eventlog.AnyVersion, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
