package main

import (
	"fmt"
	"testing"
)

// The workload runs end to end at a small N and measures what it says.
func TestRun_SmallThread(t *testing.T) {
	r, err := run(t.Context(), 300)
	if err != nil {
		t.Fatal(err)
	}
	if r.rawBytes != 300*200 || r.dbBytes <= r.rawBytes || r.historyEvents != 300 || r.appendAtN <= 0 || r.fork <= 0 || r.at <= 0 {
		t.Fatalf("result = %+v", r)
	}
}

// BenchmarkChatThread runs the workload at N = 500 and 2000 (as `go run
// ./cmd/chatbench` does) inside `make bench`, reporting the table's rows
// as metrics.
func BenchmarkChatThread(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var r result
			for range b.N {
				var err error
				if r, err = run(b.Context(), n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.dbBytes)/float64(r.rawBytes), "x-raw-text")
			b.ReportMetric(float64(r.dbBytes)/1e6, "db-MB")
			b.ReportMetric(float64(r.appendAtN.Microseconds())/1e3, "append-at-N-ms")
			b.ReportMetric(float64(r.latest.Microseconds())/1e3, "latest-ms")
			b.ReportMetric(float64(r.fork.Microseconds())/1e3, "fork-ms")
			b.ReportMetric(float64(r.history.Microseconds())/1e3, "history-ms")
			b.ReportMetric(float64(r.at.Microseconds())/1e3/20, "past-state-ms")
		})
	}
}
