package events_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath/events"
)

// benchPayload is a chunk of about 300 bytes of canonical JSON, like a
// typical transcript entry.
func benchPayload(stream string, i int) events.Payload {
	return events.ChunkAppended{Session: stream, Index: int64(i), Chunk: events.Chunk{
		Role: "assistant", Author: "root.agent", Content: strings.Repeat("lorem ipsum ", 20)}}
}

// BenchmarkAppend64VsRawInsert compares, in one run and over the same
// number of rows, durable appends from 64 goroutines (one event per call,
// each returning once its event is fsynced) with the baseline: plain
// INSERTs of rows shaped like the event rows (same table, columns and
// payload size) through the same driver, in batches of 100 per
// transaction, one connection, synchronous=FULL. Both phases write
// rowsPerPhase rows into a fresh database each iteration, so neither
// gets a shorter, WAL-checkpoint-free run than the other.
func BenchmarkAppend64VsRawInsert(b *testing.B) {
	const rowsPerPhase = 20_000
	var rawTime, appendTime time.Duration
	var requests, commits int64
	for range b.N {
		rawTime += rawInsert(b, rowsPerPhase)
		d, st := append64(b, rowsPerPhase)
		appendTime += d
		requests += st.Requests
		commits += st.Commits
	}
	raw := float64(rowsPerPhase*b.N) / rawTime.Seconds()
	app := float64(rowsPerPhase*b.N) / appendTime.Seconds()
	b.ReportMetric(raw, "raw-rows/s")
	b.ReportMetric(app, "append-rows/s")
	b.ReportMetric(100*app/raw, "%-of-raw")
	b.ReportMetric(float64(requests)/float64(commits), "appends/commit")
}

func rawInsert(b *testing.B, rows int) time.Duration {
	path := filepath.Join(b.TempDir(), "raw.db")
	migrate(b, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	payload, _ := events.Canonical(benchPayload("s-00000000", 0))
	hash := strings.Repeat("ab", 32)
	start := time.Now()
	seq := 0
	for seq < rows {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		st, err := tx.Prepare(`INSERT INTO events (seq, stream, version, type, type_version, run_id, payload, at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 100 && seq < rows; j++ {
			seq++
			if _, err := st.Exec(seq, fmt.Sprintf("s-%08d", seq%1000), seq, "chunk.appended", 1, nil, string(payload), time.Now().UnixNano(), hash); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

func append64(b *testing.B, rows int) (time.Duration, events.Stats) {
	s := MustOpenStore(b, events.Options{})
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range 64 {
		wg.Go(func() {
			stream := fmt.Sprintf("g%d", g)
			version := int64(0)
			for next.Add(1) <= int64(rows) {
				if _, err := s.Append(ctx, stream, version, benchPayload(stream, int(version))); err != nil {
					b.Error(err)
					return
				}
				version++
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	st := s.Stats()
	s.Close()
	return d, st
}

// BenchmarkAppendLatency measures one goroutine appending one durable
// event at a time, reporting the p50 and p99 of each call.
func BenchmarkAppendLatency(b *testing.B) {
	s := MustOpenStore(b, events.Options{})
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := s.Append(ctx, "s", int64(i), benchPayload("s", i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
