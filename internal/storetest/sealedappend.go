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
// subject each, to plain (a store that seals nothing), to sealed (one
// that seals under the subjects' keys) and to padded (another that seals
// nothing, whose chunks are longer by what sealing adds to a payload) in
// rotating rounds, the order of the three changing every round: on a
// shared machine they then see the same spells of load, which benchmarks
// run one after the other do not. It reports the mean time of an append
// to each and the ratios sealed/plain and padded/plain: what sealing
// costs, and what the same number of bytes costs in clear. With them, the
// CPU this process (appenders and writer) spent an append in each store's
// rounds, and the database server's where serverCPU reads it.
func CompareSealedAppends(b *testing.B, plain, sealed, padded *eventlog.Store, serverCPU func() (time.Duration, error)) {
	const goroutines, perRound = 16, 25
	// A first round on each makes the sealed store's keys (once a
	// subject, not what an append costs) and measures the padding.
	appendRound(b, plain, goroutines, perRound, 0)
	appendRound(b, sealed, goroutines, perRound, 0)
	pad := lastPayloadLen(b, sealed) - lastPayloadLen(b, plain)
	if pad < 0 {
		b.Fatalf("a sealed payload is %d bytes shorter than the plain one", -pad)
	}
	stores := [3]*eventlog.Store{plain, sealed, padded}
	pads := [3]int{0, 0, pad}
	// cpu is this process's CPU in each store's rounds: its appenders'
	// and its writer's; server is the database server's (serverCPU, nil
	// for SQLite), whose one backend runs each writer's commits.
	var took, cpu, server [3]time.Duration
	rounds := 0
	var before [3]eventlog.Stats
	for j := range stores {
		before[j] = stores[j].Stats()
	}
	for b.Loop() {
		for j := range stores {
			k := (rounds + j) % len(stores)
			srv0 := readServerCPU(b, serverCPU)
			start, cpu0 := time.Now(), processCPU()
			appendRound(b, stores[k], goroutines, perRound, pads[k])
			took[k] += time.Since(start)
			cpu[k] += processCPU() - cpu0
			server[k] += readServerCPU(b, serverCPU) - srv0
		}
		rounds++
	}
	n := float64(rounds * goroutines * perRound)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "plain-ns/append")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "sealed-ns/append")
	b.ReportMetric(float64(took[1])/float64(took[0]), "sealed/plain")
	b.ReportMetric(float64(took[2])/float64(took[0]), "padded/plain")
	// A group commit's size: the appends of a commit that waited for a
	// sealing caller, or went without it.
	for j, name := range [3]string{"plain", "sealed", "padded"} {
		st := stores[j].Stats()
		b.ReportMetric(float64(st.Requests-before[j].Requests)/float64(st.Commits-before[j].Commits), name+"-appends/commit")
		b.ReportMetric(float64(st.RoundTrips-before[j].RoundTrips)/float64(st.Commits-before[j].Commits), name+"-roundtrips/commit")
		b.ReportMetric(float64(st.TreeRoundTrips-before[j].TreeRoundTrips)/float64(st.Commits-before[j].Commits), name+"-tree-roundtrips/commit")
	}
	if cpu[0] > 0 {
		b.ReportMetric(float64(cpu[0].Nanoseconds())/n/1e3, "plain-cpu-µs/append")
		b.ReportMetric(float64(cpu[1].Nanoseconds())/n/1e3, "sealed-cpu-µs/append")
		b.ReportMetric(float64(cpu[2].Nanoseconds())/n/1e3, "padded-cpu-µs/append")
		for j, name := range [3]string{"plain", "sealed", "padded"} {
			if server[j] > 0 {
				b.ReportMetric(float64(server[j].Nanoseconds())/n/1e3, name+"-server-µs/append")
			}
		}
	}
}

// readServerCPU is serverCPU's answer, zero without one.
func readServerCPU(b *testing.B, serverCPU func() (time.Duration, error)) time.Duration {
	if serverCPU == nil {
		return 0
	}
	d, err := serverCPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// lastPayloadLen is the length of the payload of s's last event as
// stored.
func lastPayloadLen(b *testing.B, s *eventlog.Store) int {
	var payload string
	if err := s.DB().QueryRowContext(b.Context(), `SELECT payload FROM events ORDER BY seq DESC LIMIT 1`).Scan(&payload); err != nil {
		b.Fatal(err)
	}
	return len(payload)
}

// appendRound makes perRound appends from each of n goroutines, each to
// a stream of its own, of chunks pad bytes longer than typical.
func appendRound(b *testing.B, s *eventlog.Store, n, perRound, pad int) {
	content := strings.Repeat("lorem ipsum ", 20) + strings.Repeat("x", pad)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			stream := fmt.Sprintf("g%d", g)
			for i := range perRound {
				p := events.ChunkAppended{Session: stream, Index: int64(i), Chunk: events.Chunk{
					Role: "assistant", Author: "root.agent", Content: content}}
				if _, err := s.Append(b.Context(), stream, eventlog.AnyVersion, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
