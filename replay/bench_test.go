package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// BenchmarkReplay1000Rounds replays a recorded run of one agent making
// 1,000 tool rounds (no network, no sleeps) and reports events/s.
func BenchmarkReplay1000Rounds(b *testing.B) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	mk := func() *flow.Agent {
		count, _ := flow.NewTool("count", "Count.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) { return "ok", nil })
		a, err := flow.NewAgent("You count.", provider(b, echoModel{1000}), flow.WithTools(count), flow.WithMaxRounds(1001))
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	input, _ := rt.NewUserSession(ctx, "count to a thousand")
	t0 := time.Now()
	run, err := rt.Start(ctx, "count", mk(), input)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("recording took %v", time.Since(t0))
	b.ResetTimer()
	start := time.Now()
	var events int
	for range b.N {
		rep, err := replay.Run(ctx, rt, run.ID, mk())
		if err != nil || !rep.OK() {
			b.Fatalf("%v %v", rep, err)
		}
		events += rep.Recorded
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}
