package storetest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
)

// BenchmarkPostgres_MemoryCatchUp measures what a machine joining a
// PostgreSQL store pays for memory: its memory index is in its own
// directory, so its first use indexes every memory in the shared log (the
// same catch-up later opens do from their checkpoint). The log holds
// 100,000 memories of about 200 bytes over ten namespaces; it reports
// memories/s over the whole first open (read from PostgreSQL, analyze,
// index).
func BenchmarkPostgres_MemoryCatchUp(b *testing.B) {
	const memories, namespaces, perAppend = 100_000, 10, 1000
	ctx := context.Background()
	tg := postgresTarget(b)
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: b.TempDir(), DSN: tg.DSN})
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("deploy key rotates monday staging postgres fifteen cluster worker console " +
		"answer short prefers ana user agent memory recall session commit index lock process machine " +
		"river queue lease retry budget token model vendor sandbox shell file write read list forget")
	rng := rand.New(rand.NewPCG(1, 2))
	for ns := range namespaces {
		name := fmt.Sprintf("user/u%d", ns)
		for first := int64(1); first <= memories/namespaces; first += perAppend {
			ps := make([]events.Payload, perAppend)
			for i := range ps {
				var sb strings.Builder
				for sb.Len() < 200 {
					sb.WriteString(words[rng.IntN(len(words))])
					sb.WriteByte(' ')
				}
				ps[i] = events.MemoryRemembered{Namespace: name, ID: memory.DeriveID(name, first+int64(i)), Text: sb.String()}
			}
			if _, err := rt.Store().Append(ctx, events.MemoryStream(name), eventlog.AnyVersion, ps...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := rt.Close(); err != nil {
		b.Fatal(err)
	}
	var elapsed time.Duration
	for b.Loop() {
		// A new machine: a new directory, no index yet.
		rt, err := rath.OpenWith(ctx, rath.Options{Dir: b.TempDir(), DSN: tg.DSN})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		m, err := rt.Memory(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Recall(ctx, "user/u0", "deploy key", 5); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		rt.Close()
	}
	b.ReportMetric(float64(memories*b.N)/elapsed.Seconds(), "memories/s")
}
