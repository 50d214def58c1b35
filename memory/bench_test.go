package memory_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/memory"
)

// Benchmark corpus: 100,000 memories of about 200 bytes over 10
// namespaces, built once per process (bulk appends, then one catch-up).
const (
	benchMemories = 100_000
	benchSize     = 200
)

var benchNamespaces = func() []string {
	ns := make([]string, 10)
	for i := range ns {
		ns[i] = fmt.Sprintf("user/u%d", i)
	}
	return ns
}()

var benchCorpus struct {
	once sync.Once
	dir  string // runtime directory with the log (and, once built, memory.bleve)
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchCorpus.dir != "" {
		os.RemoveAll(benchCorpus.dir)
	}
	os.Exit(code)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchDir returns the runtime directory holding the benchmark log.
func benchDir(b *testing.B) string {
	b.Helper()
	benchCorpus.once.Do(func() {
		dir, err := os.MkdirTemp("", "rath-memory-bench")
		if err != nil {
			benchCorpus.err = err
			return
		}
		benchCorpus.dir = dir
		rt, err := rath.Open(context.Background(), dir)
		if err != nil {
			benchCorpus.err = err
			return
		}
		defer rt.Close()
		bulkRemember(b, rt.Store(), benchNamespaces, benchMemories, benchSize, 0, newTextGen(7))
	})
	if benchCorpus.err != nil {
		b.Fatal(benchCorpus.err)
	}
	return benchCorpus.dir
}

func percentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkCatchUp indexes the whole log from checkpoint 0 (what a first
// open, or a rebuild after a lost index, does) and reports memories/s, for
// two batch sizes.
func BenchmarkCatchUp(b *testing.B) {
	dir := benchDir(b)
	rt, err := rath.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	for _, size := range []int{1000, memory.DefaultBatchSize} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			var elapsed time.Duration
			var diskBytes int64
			for i := 0; i < b.N; i++ {
				idxDir := filepath.Join(b.TempDir(), "memory.bleve")
				start := time.Now()
				m, err := memory.OpenLocal(context.Background(), rt.Store(), idxDir, memory.LocalOptions{Logger: quietLogger(), BatchSize: size})
				if err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				m.Close()
				diskBytes = dirSize(idxDir)
				b.StartTimer()
			}
			b.ReportMetric(float64(benchMemories*b.N)/elapsed.Seconds(), "memories/s")
			b.ReportMetric(float64(diskBytes)/(1<<20), "index-MiB")
		})
	}
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// openBenchMemory opens the benchmark log's memory, building its index the
// first time.
func openBenchMemory(b *testing.B) (*rath.Runtime, *memory.Local) {
	dir := benchDir(b)
	rt, err := rath.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	m, err := memory.OpenLocal(context.Background(), rt.Store(), filepath.Join(dir, testIndexName), memory.LocalOptions{Logger: quietLogger()})
	if err != nil {
		rt.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		m.Close()
		rt.Close()
	})
	return rt, m
}

// BenchmarkRecall measures Recall (k=10, queries of 2-3 words, one
// namespace of ten) over 100,000 memories, including its read-your-writes
// check. "common" queries use words of frequency rank 20-420 (each in
// roughly 2-15% of memories, so one query matches thousands); "rarer"
// ones ranks 400-4000 (a few hundred matches).
//
// It measures a settled index: it first waits for scorch's background
// merging after the catch-up to end (it reports how long that took), since
// merges running beside the searches share the two cores and add a
// couple of milliseconds to p99 for the minute after a large catch-up.
func BenchmarkRecall(b *testing.B) {
	_, m := openBenchMemory(b)
	settled := waitForMerges(b, m)
	for _, qs := range []struct {
		name   string
		lo, hi int
	}{{"common", 20, 420}, {"rarer", 400, 4000}} {
		b.Run(qs.name, func(b *testing.B) {
			g := newTextGen(11)
			queries := make([]string, 1000)
			for i := range queries {
				queries[i] = g.queryRanks(qs.lo, qs.hi)
			}
			ctx := context.Background()
			// Warm up: the first searches load segment data.
			for i := range 100 {
				m.Recall(ctx, benchNamespaces[i%10], queries[i], 10)
			}
			lat := make([]time.Duration, 0, b.N)
			hits := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				h, err := m.Recall(ctx, benchNamespaces[i%10], queries[i%len(queries)], 10)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(h)
			}
			b.StopTimer()
			percentiles(b, lat)
			b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
			b.ReportMetric(settled.Seconds(), "merge-wait-s")
		})
	}
}

// waitForMerges waits until the index's segments have stopped changing
// for a second (at most two minutes) and returns how long that took.
func waitForMerges(b *testing.B, m *memory.Local) time.Duration {
	start := time.Now()
	mem, disk := m.Segments()
	stable := time.Now()
	for time.Since(stable) < time.Second {
		if time.Since(start) > 2*time.Minute {
			b.Fatalf("index segments still changing after 2 minutes (%d in memory, %d on disk)", mem, disk)
		}
		time.Sleep(100 * time.Millisecond)
		if m2, d2 := m.Segments(); m2 != mem || d2 != disk {
			mem, disk, stable = m2, d2, time.Now()
		}
	}
	b.Logf("index settled after %v: %d in-memory and %d on-disk segments", time.Since(start).Round(time.Millisecond), mem, disk)
	return time.Since(start)
}

// BenchmarkRemember measures Remember: one durable event (fsync), with
// indexing off the caller's path.
func BenchmarkRemember(b *testing.B) {
	rt, err := rath.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	m, err := memory.OpenLocal(context.Background(), rt.Store(), filepath.Join(rt.Dir(), testIndexName), memory.LocalOptions{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	g := newTextGen(13)
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = g.text(benchSize)
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := m.Remember(ctx, benchNamespaces[i%10], texts[i%len(texts)], nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

// BenchmarkRememberThenRecall measures a recall right after a remember,
// over 100,000 memories: the recall waits for the new memory to be
// indexed (one small batch).
func BenchmarkRememberThenRecall(b *testing.B) {
	_, m := openBenchMemory(b)
	g := newTextGen(17)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ns := benchNamespaces[i%10]
		if _, err := m.Remember(ctx, ns, g.text(benchSize), nil); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := m.Recall(ctx, ns, g.query(), 10); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

// BenchmarkReopenRecall measures the first recall after the index was
// closed for being idle (LocalOptions.IdleClose), over 100,000 memories:
// it takes the lock, opens and checks the index, catches up and searches.
// That is what a process pays for not holding the index between uses.
func BenchmarkReopenRecall(b *testing.B) {
	dir := benchDir(b)
	openBenchMemory(b) // build the index once, then close it
	rt, err := rath.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	m, err := memory.OpenLocal(context.Background(), rt.Store(), filepath.Join(dir, testIndexName),
		memory.LocalOptions{Logger: quietLogger(), IdleClose: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	g := newTextGen(19)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for m.IsOpen() {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := m.Recall(ctx, benchNamespaces[i%10], g.query(), 10); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

// BenchmarkPurge purges 10 memories at a time (what an erasure of a
// subject that wrote them does) from an index of 100,000, and rebuilds
// the same index once from the log (what an erasure did before): purge-ms
// and rebuild-ms are the two times.
func BenchmarkPurge(b *testing.B) {
	dir := benchDir(b)
	rt, err := rath.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	m, err := memory.OpenLocal(context.Background(), rt.Store(), filepath.Join(b.TempDir(), "memory.bleve"), memory.LocalOptions{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := b.Context()
	gen := newTextGen(11)
	var purging time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		hits, err := m.Recall(ctx, benchNamespaces[n%len(benchNamespaces)], gen.query(), 10)
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		b.StartTimer()
		start := time.Now()
		if _, err := m.Purge(ctx, ids); err != nil {
			b.Fatal(err)
		}
		purging += time.Since(start)
		n++
	}
	b.StopTimer()
	start := time.Now()
	if _, err := m.Rebuild(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(purging.Milliseconds())/float64(n), "purge-ms")
	b.ReportMetric(float64(time.Since(start).Milliseconds()), "rebuild-ms")
}
