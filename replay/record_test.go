package replay_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// A record of thousands of events, interleaved in the log with another
// run's, is read in pages while the replay runs: every event of the run,
// and only those, is compared, and a change near the end is found there.
func TestRun_LongRecordReadWhileReplaying(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	const rounds = 400
	counter := func(maxRounds int) *flow.Agent {
		count, err := flow.NewTool("count", "Count.", func(_ context.Context, _ *session.Session, a countArgs) (string, error) { return "ok", nil })
		if err != nil {
			t.Fatal(err)
		}
		a, err := flow.NewAgent("You count.", provider(t, echoModel{rounds}), flow.WithTools(count), flow.WithMaxRounds(maxRounds))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Two runs at once, so their events interleave in seq order.
	var runIDs [2]string
	var errs [2]error
	var wg sync.WaitGroup
	for i := range runIDs {
		wg.Go(func() {
			input, err := rt.NewUserSession(ctx, "count")
			if err != nil {
				errs[i] = err
				return
			}
			run, err := rt.Start(ctx, "count", counter(rounds+1), input)
			if err == nil {
				runIDs[i] = run.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	recorded, err := rt.Store().ReadRun(ctx, runIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) < 5*rounds {
		t.Fatalf("recorded %d events, want at least %d", len(recorded), 5*rounds)
	}
	var total int64
	rep, err := replay.Run(ctx, rt, runIDs[0], counter(rounds+1), replay.WithProgress(func(_, n int64) { total = n }))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Recorded != len(recorded) || rep.Matched != len(recorded) || total != int64(len(recorded)) {
		t.Fatalf("replay = %v (recorded %d, matched %d, progress total %d); the run has %d events", rep, rep.Recorded, rep.Matched, total, len(recorded))
	}
	// Code that stops 20 rounds early diverges in the record's last page.
	rep, err = replay.Run(ctx, rt, runIDs[0], counter(rounds-20))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Divergence.Seq < recorded[len(recorded)*9/10].Seq {
		t.Fatalf("replay of shorter code = %v; want a divergence in the last tenth of the record (from seq %d)", rep, recorded[len(recorded)*9/10].Seq)
	}
}
