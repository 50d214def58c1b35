package eventlog_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
)

// helperProcBenchEnv makes the test binary one writer of
// BenchmarkAppendAcrossProcesses: "MODE|PATH|INDEX|N", MODE "append" (a
// store's durable appends), "ungated" (the same without the write gate)
// or "raw" (plain INSERTs, each its own transaction). It prints how long each write took, in µs, a line each.
const helperProcBenchEnv = "RATH_EVENTS_TEST_PROCBENCH"

// Bounds of BenchmarkAppendAcrossProcesses.
const (
	procBenchProcs  = 4
	procBenchWrites = 300
)

func helperProcBench(spec string) int {
	f := strings.Split(spec, "|")
	mode, path, index := f[0], f[1], f[2]
	n, _ := strconv.Atoi(f[3])
	ctx := context.Background()
	write, done, err := procBenchWriter(ctx, mode, path, index)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer done()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i := range n {
		t0 := time.Now()
		if err := write(i); err != nil {
			fmt.Fprintf(os.Stderr, "write %d: %v\n", i, err)
			return 1
		}
		fmt.Fprintln(out, time.Since(t0).Microseconds())
	}
	return 0
}

// procBenchWriter opens what one writer process writes through.
func procBenchWriter(ctx context.Context, mode, path, index string) (write func(int) error, done func(), err error) {
	stream := "p" + index
	payload := benchPayload(stream, 0)
	if mode != "raw" {
		opts := eventlog.Options{Path: path}
		if mode == "ungated" {
			opts = eventlog.WithoutWriteGate(opts)
		}
		s, err := eventlog.Open(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return func(i int) error {
			_, err := s.Append(ctx, stream, int64(i), payload)
			return err
		}, func() { s.Close() }, nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	body := fmt.Sprintf("%#v", payload)
	return func(i int) error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO raw (stream, version, body) VALUES (?, ?, ?)`, stream, i, body); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}, func() { db.Close() }, nil
}

// BenchmarkAppendAcrossProcesses has procBenchProcs processes write
// procBenchWrites events each, one at a time, to one SQLite file, in
// three phases on fresh files: through rath's stores (whose writers queue
// on the write gate), through stores without the gate (SQLite's busy
// handler alone orders them, as before the gate), and as plain INSERTs to
// a table, each its own transaction (the raw baseline). It reports the
// p50, p99 and slowest single write of each, and the writes per second.
func BenchmarkAppendAcrossProcesses(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		store, ungated := filepath.Join(dir, "rath.db"), filepath.Join(dir, "ungated.db")
		migrate(b, store)
		migrate(b, ungated)
		raw := filepath.Join(dir, "raw.db")
		db, err := sql.Open("sqlite", "file:"+raw+"?_pragma=journal_mode(WAL)")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE raw (id INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		db.Close()
		for _, phase := range []struct{ mode, path, name string }{{"append", store, "gated"}, {"ungated", ungated, "ungated"}, {"raw", raw, "raw"}} {
			lat, elapsed := procBenchRun(b, phase.mode, phase.path)
			slices.Sort(lat)
			ms := func(d int64) float64 { return float64(d) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), phase.name+"-p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), phase.name+"-p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), phase.name+"-max-ms")
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), phase.name+"-writes/s")
		}
	}
}

// procBenchRun runs the writer processes of one phase and returns every
// write's duration in µs and the phase's wall time.
func procBenchRun(b *testing.B, mode, path string) ([]int64, time.Duration) {
	var mu sync.Mutex
	var lat []int64
	var wg sync.WaitGroup
	start := time.Now()
	for p := range procBenchProcs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d", helperProcBenchEnv, mode, path, p, procBenchWrites))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			var mine []int64
			for sc.Scan() {
				v, err := strconv.ParseInt(sc.Text(), 10, 64)
				if err != nil {
					b.Errorf("%s writer %d printed %q", mode, p, sc.Text())
					continue
				}
				mine = append(mine, v)
			}
			if err := cmd.Wait(); err != nil {
				b.Errorf("%s writer %d: %v\n%s", mode, p, err, stderr.String())
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(lat) != procBenchProcs*procBenchWrites {
		b.Fatalf("%s: %d writes timed, want %d", mode, len(lat), procBenchProcs*procBenchWrites)
	}
	return lat, time.Since(start)
}
