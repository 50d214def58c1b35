package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/proccpu"
	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// chunk is a transcript entry of about 300 bytes of JSON.
func chunk(stream string, i int) *events.ChunkAppended {
	return &events.ChunkAppended{Session: stream, Index: int64(i), Chunk: events.Chunk{
		Role: "assistant", Author: "root.agent", Content: strings.Repeat("lorem ipsum ", 20)}}
}

// BenchmarkPostgres_Append64VsRawInsert runs, in one run and for the same
// number of rows, 64 goroutines making plain durable INSERTs of rows
// shaped like event rows (one row per autocommit transaction, 64
// connections) and then 64 goroutines making durable Appends through the
// store (one writer, group commit, hash chain, chain lock). It reports
// both rates and the ratio.
func BenchmarkPostgres_Append64VsRawInsert(b *testing.B) {
	ctx := context.Background()
	n := max(b.N, 2000)
	tg := postgresTarget(b)
	s := storetest.OpenStore(b, tg)
	db, err := sql.Open("pgx", tg.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(64)
	db.Exec(`CREATE TABLE raw_events (LIKE events INCLUDING ALL)`)
	payload, _ := events.Canonical(chunk("s-00000000", 0))
	hash := strings.Repeat("ab", 32)
	b.ResetTimer()

	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Go(func() {
			for seq := next.Add(1); seq <= int64(n); seq = next.Add(1) {
				if _, err := db.ExecContext(ctx, `INSERT INTO raw_events (seq, stream, version, type, type_version, run_id, payload, at, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
					seq, fmt.Sprintf("s-%08d", seq), 1, "chunk.appended", 1, nil, string(payload), time.Now().UnixNano(), hash); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	raw := float64(n) / time.Since(start).Seconds()

	next.Store(0)
	start = time.Now()
	for g := range 64 {
		wg.Go(func() {
			stream := fmt.Sprintf("g%d", g)
			for v := int64(0); next.Add(1) <= int64(n); v++ {
				if _, err := s.Append(ctx, stream, v, chunk(stream, int(v))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	appends := float64(n) / time.Since(start).Seconds()
	b.ReportMetric(raw, "raw-rows/s")
	b.ReportMetric(appends, "appends/s")
	b.ReportMetric(100*appends/raw, "%-of-raw")
	st := s.Stats()
	b.ReportMetric(float64(st.Requests)/float64(st.Commits), "appends/commit")
}

// BenchmarkPostgres_AppendLatency is one goroutine appending one durable
// event at a time.
func BenchmarkPostgres_AppendLatency(b *testing.B) {
	s := storetest.OpenStore(b, postgresTarget(b))
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := s.Append(ctx, "s", int64(i), chunk("s", i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPostgres_AppendSealed is eventlog's BenchmarkAppend_Sealed on
// PostgreSQL: appends from 16 goroutines to a store that seals them, to
// one that does not and to one that does not with chunks as long as the
// sealed ones, in rotating rounds; sealed/plain is what sealing costs,
// padded/plain what the same bytes cost in clear.
func BenchmarkPostgres_AppendSealed(b *testing.B) {
	plain := storetest.OpenStore(b, postgresTarget(b))
	tg := postgresTarget(b)
	if err := rath.Migrate(b.Context(), tg.DSN); err != nil {
		b.Fatal(err)
	}
	kr := keyring.New(keyringtest.KEK(b), func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })
	sealed, err := eventlog.Open(b.Context(), eventlog.Options{DSN: tg.DSN, Sealer: kr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sealed.Close() })
	padded := storetest.OpenStore(b, postgresTarget(b))
	storetest.CompareSealedAppends(b, plain, sealed, padded, func() (time.Duration, error) { return proccpu.Tree(server.PID()) })
}

// BenchmarkPostgres_Rebuild rebuilds the projections of a 20,000-event
// log on PostgreSQL: 40 sessions of 500 chunks.
func BenchmarkPostgres_Rebuild(b *testing.B) {
	ctx := context.Background()
	rt, err := rath.OpenWith(ctx, postgresTarget(b).Options())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	const total = 20000
	var evs int64
	for evs < total {
		s, err := rt.NewUserSession(ctx, "hello")
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]events.Payload, 0, 500)
		for i := range 500 {
			batch = append(batch, chunk(s.ID(), i+1))
		}
		if _, err := rt.Store().Append(ctx, s.ID(), s.Version(), batch...); err != nil {
			b.Fatal(err)
		}
		evs += 501
	}
	benchRebuild(b, rt)
}

// BenchmarkPostgres_RebuildAgentLog rebuilds the projections of a log
// shaped like agents' work (storetest.AgentLog): 400 sessions of 12
// rounds, a provider call and a tool call a round, forks and merges;
// about 20,000 events.
func BenchmarkPostgres_RebuildAgentLog(b *testing.B) {
	rt, err := rath.OpenWith(context.Background(), postgresTarget(b).Options())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	storetest.AgentLog(b, rt, 400, 12)
	benchRebuild(b, rt)
}

// benchRebuild rebuilds rt's projections b.N times and reports events/s.
func benchRebuild(b *testing.B, rt *rath.Runtime) {
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	var done int64
	for range b.N {
		st, err := rt.Rebuild(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		done += st.Events
	}
	b.ReportMetric(float64(done)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkPostgres_CatchUpLag measures how long after one store's Append
// returns a subscriber on another store (another process's view of the
// same database) yields the event: LISTEN/NOTIFY's wake-up plus the read.
func BenchmarkPostgres_CatchUpLag(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tg := postgresTarget(b)
	writer, reader := storetest.OpenStore(b, tg), storetest.OpenStore(b, tg)
	seen := make(chan time.Time, 1)
	go func() {
		for _, err := range reader.Subscribe(ctx, eventlog.Query{}) {
			if err != nil {
				return
			}
			seen <- time.Now()
		}
	}()
	lag := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if _, err := writer.Append(ctx, "s", int64(i), chunk("s", i)); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		lag = append(lag, (<-seen).Sub(acked))
	}
	b.StopTimer()
	slices.Sort(lag)
	b.ReportMetric(float64(lag[len(lag)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lag[len(lag)*99/100].Microseconds()), "p99-µs")
}
