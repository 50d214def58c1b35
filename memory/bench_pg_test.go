package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/memory"
)

// BenchmarkCatchUpPostgres is BenchmarkCatchUp with the log in PostgreSQL
// (a throwaway cluster): what a machine that joins a shared store does
// the first time it opens memory, since each machine keeps its own index
// (Dir/memory.bleve) and catches it up from the shared log. The same
// 100,000 memories; it reports memories/s and how long one catch-up took.
func BenchmarkCatchUpPostgres(b *testing.B) {
	ctx := context.Background()
	srv, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(ctx, "memorybench")
	if err != nil {
		b.Fatal(err)
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: b.TempDir(), DSN: dsn})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	bulkRemember(b, rt.Store(), benchNamespaces, benchMemories, benchSize, 0, newTextGen(7))
	for _, size := range []int{1000, memory.DefaultBatchSize} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				// A fresh index each time: a machine that has none yet.
				idxDir := filepath.Join(b.TempDir(), rath.MemoryDir)
				start := time.Now()
				m, err := memory.OpenLocal(ctx, rt.Store(), idxDir, memory.LocalOptions{Logger: quietLogger(), BatchSize: size})
				if err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				m.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(benchMemories*b.N)/elapsed.Seconds(), "memories/s")
			b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/catch-up")
		})
	}
}
