package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// BenchmarkCounterfactualFork forks a run of about 10,000 events at its
// model answers nearest seq 10, 5,000 and 9,990 of the run, and reports
// the time of each fork and the bytes of the rows it stored (the
// replacement itself is recorded by the new run, when it continues).
func BenchmarkCounterfactualFork(b *testing.B) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	count, _ := flow.NewTool("count", "Count.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) { return "ok", nil })
	agent, err := flow.NewAgent("You count.", provider(b, echoModel{2000}), flow.WithTools(count), flow.WithMaxRounds(2001))
	if err != nil {
		b.Fatal(err)
	}
	input, _ := rt.NewUserSession(ctx, "count to two thousand")
	run, err := rt.Start(ctx, "count", agent, input)
	if err != nil {
		b.Fatal(err)
	}
	calls, err := rt.Store().Read(ctx, eventlog.Query{RunID: run.ID, Types: []string{events.TypeProviderCalled}})
	if err != nil {
		b.Fatal(err)
	}
	all, err := rt.Store().Read(ctx, eventlog.Query{RunID: run.ID})
	if err != nil {
		b.Fatal(err)
	}
	first := all[0].Seq
	b.Logf("the run has %d events", len(all))
	answer := replay.Replacement{Answer: &model.Response{Content: "I stop here."}}
	for _, at := range []int64{10, 5000, 9990} {
		i := 0
		for i < len(calls)-1 && calls[i].Seq < first+at-1 {
			i++
		}
		seq := calls[i].Seq
		b.Run(fmt.Sprintf("at=%d", at), func(b *testing.B) {
			var worst time.Duration
			var stored int
			for range b.N {
				head, _ := rt.Store().Head(ctx)
				t0 := time.Now()
				if _, err := replay.NewCounterfactual(ctx, rt, run.ID, seq, answer); err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(t0))
				added, err := rt.Store().Read(ctx, eventlog.Query{FromSeq: head.Seq + 1})
				if err != nil {
					b.Fatal(err)
				}
				stored = 0
				for _, ev := range added {
					stored += len(ev.Payload) + len(ev.Stream) + len(ev.Type) + len(ev.Hash) + len(ev.RunID)
				}
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(stored), "stored-bytes")
		})
	}
}
