package eventlog_test

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

	"github.com/gorath/rath/eventlog"
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
// INSERTs, through the same driver, of the rows the appenders leave in the
// table (64 streams taking turns, each stream's versions in order, the
// stored payload and hash bytes), in batches of 100 per transaction, one
// connection, synchronous=FULL. Both phases write rowsPerPhase rows into
// a fresh database each iteration, so neither gets a shorter,
// WAL-checkpoint-free run than the other.
//
// Until 2026-11-25 the baseline wrote 1,000 streams in key order, which
// touches fewer index pages per commit than 64 interleaved streams do; it
// is kept as BenchmarkAppend64VsRawInsertKeyOrder, to compare with the
// figures measured against it.
func BenchmarkAppend64VsRawInsert(b *testing.B) { benchAppend64(b, sameRows) }

// BenchmarkAppend64VsRawInsertKeyOrder is the earlier baseline: 1,000
// streams, rows in key order, the payload as encoded and the hash as text.
func BenchmarkAppend64VsRawInsertKeyOrder(b *testing.B) { benchAppend64(b, keyOrderRows) }

// rawRow returns the baseline's row number seq (from 0).
type rawRow func(seq int) (stream string, version int, payload []byte, hash any)

// sameRows are the rows 64 appenders of benchPayload leave in the table.
func sameRows(seq int) (string, int, []byte, any) {
	stream, version := fmt.Sprintf("g%d", seq%64), seq/64+1
	p, _ := events.Canonical(benchPayload(stream, version-1))
	return stream, version, eventlog.StoredPayloadForTest(stream, events.TypeChunkAppended, p), make([]byte, 32)
}

func keyOrderRows(seq int) (string, int, []byte, any) {
	p, _ := events.Canonical(benchPayload("s-00000000", 0))
	return fmt.Sprintf("s-%08d", (seq+1)%1000), seq + 1, p, strings.Repeat("ab", 32)
}

func benchAppend64(b *testing.B, rows rawRow) {
	const rowsPerPhase = 20_000
	var rawTime, appendTime time.Duration
	var requests, commits int64
	for range b.N {
		rawTime += rawInsert(b, rowsPerPhase, rows)
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

func rawInsert(b *testing.B, rows int, row rawRow) time.Duration {
	path := filepath.Join(b.TempDir(), "raw.db")
	migrate(b, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The rows are built before the clock starts: the baseline times the
	// INSERTs alone.
	type rowValues struct {
		stream  string
		version int
		payload string
		hash    any
	}
	values := make([]rowValues, rows)
	for i := range values {
		stream, version, payload, hash := row(i)
		values[i] = rowValues{stream, version, string(payload), hash}
	}
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
			v := values[seq]
			seq++
			if _, err := st.Exec(seq, v.stream, v.version, "chunk.appended", 1, nil, v.payload, time.Now().UnixNano(), v.hash); err != nil {
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

func append64(b *testing.B, rows int) (time.Duration, eventlog.Stats) {
	s := MustOpenStore(b, eventlog.Options{})
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
	s := MustOpenStore(b, eventlog.Options{})
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
