package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// instant is a zero-latency model: it answers at once, no tools.
type instant struct{}

func (instant) Complete(context.Context, model.Request) (model.Response, error) {
	return model.Response{Content: "done", Usage: events.Usage{TotalTokens: 1}}, nil
}

func instantWorkflow(context.Context, string, map[string]string) (flow.Workflow, error) {
	p, err := flow.ResolveProvider(flow.Provider{Client: instant{}, Model: "instant"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		return nil, err
	}
	return flow.NewAgent("Answer.", p)
}

// benchFleet submits n runs of a zero-latency agent to an embedded store
// and works them with `workers` runtimes (each its own store writer, as
// separate processes have), 4 runs at a time each. It reports runs/s and
// the submit-to-start latency (run.submitted to run.started).
func benchFleet(b *testing.B, workers int) {
	ctx := context.Background()
	dir := b.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	sub, err := fleet.Open(ctx, rt, fleet.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	n := max(b.N, 40)
	ids := submitInstant(ctx, b, rt, sub, n)
	b.ResetTimer()
	start := time.Now()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, workers)
	for range workers {
		wrt, err := rath.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		defer wrt.Close()
		f, err := fleet.Open(ctx, wrt, fleet.Options{Concurrency: 4, Resolve: instantWorkflow})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		go func() { done <- f.Run(wctx, 10*time.Second) }()
	}
	if _, err := fleet.Wait(ctx, rt, ids...); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	for range workers {
		<-done
	}
	var lat []time.Duration
	for _, id := range ids {
		s, _ := rt.Store().ReadStream(ctx, events.SubmitStream(id), 1)
		r, _ := rt.Store().ReadStream(ctx, id, 1)
		if len(s) > 0 && len(r) > 0 {
			lat = append(lat, r[0].At.Sub(s[0].At))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "runs/s")
	// Submit-to-start includes the queue's wait behind earlier runs: all
	// runs are submitted before the workers start.
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-submit-to-start-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-submit-to-start-ms")
}

// submitInstant submits n runs of the instant workflow, each on an input
// session of its own, and returns their ids.
func submitInstant(ctx context.Context, b *testing.B, rt *rath.Runtime, f *fleet.Fleet, n int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	for i := range n {
		in, err := rt.NewUserSession(ctx, fmt.Sprint("q", i))
		if err != nil {
			b.Fatal(err)
		}
		id, err := f.Submit(ctx, "instant", in, nil)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func BenchmarkFleet_1Worker(b *testing.B)  { benchFleet(b, 1) }
func BenchmarkFleet_4Workers(b *testing.B) { benchFleet(b, 4) }

// BenchmarkFleet_SubmitToStart measures a lone run's latency from
// Submit returning to its run.started, with one idle worker waiting.
func BenchmarkFleet_SubmitToStart(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	f, err := fleet.Open(ctx, rt, fleet.Options{Concurrency: 1, Resolve: instantWorkflow})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(wctx, 10*time.Second) }()
	defer func() { stop(); <-done }()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		in, err := rt.NewUserSession(ctx, fmt.Sprint("q", i))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		id, err := f.Submit(ctx, "instant", in, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fleet.Wait(ctx, rt, id); err != nil {
			b.Fatal(err)
		}
		r, _ := rt.Store().ReadStream(ctx, id, 1)
		lat = append(lat, r[0].At.Sub(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkFleet_RecoveryAfterSIGKILL measures how long a run stays
// without a worker after its worker process is SIGKILLed in the middle
// of a tool call: from the kill to another worker's lease on the run
// (lease time 2 s), and to the run's end.
func BenchmarkFleet_RecoveryAfterSIGKILL(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	const lease = 2 * time.Second
	f, err := fleet.Open(ctx, rt, fleet.Options{LeaseTime: lease, Resolve: tally})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ws := b.TempDir()
	var takeover, finish []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// The doomed worker starts first and alone, so it takes the run.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s - hold", workerEnv, dir))
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(out)
		if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "ready") {
			b.Fatalf("worker did not start: %q", l)
		}
		in, err := rt.NewUserSession(ctx, fmt.Sprint("tally ", i))
		if err != nil {
			b.Fatal(err)
		}
		id, err := f.Submit(ctx, "tally", in, map[string]string{"workspace": ws})
		if err != nil {
			b.Fatal(err)
		}
		if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "holding") {
			b.Fatalf("worker said %q", l)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- f.Run(wctx, 10*time.Second) }()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		t0 := time.Now()
		for {
			evs, err := rt.Store().ReadStream(ctx, events.LeaseStream(id), 1)
			if err != nil {
				b.Fatal(err)
			}
			if p, _ := evs[len(evs)-1].Decode(); p.(*events.RunLeased).Worker == f.WorkerID() {
				takeover = append(takeover, time.Since(t0))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := fleet.Wait(ctx, rt, id); err != nil {
			b.Fatal(err)
		}
		finish = append(finish, time.Since(t0))
		stop()
		<-done
	}
	b.StopTimer()
	slices.Sort(takeover)
	slices.Sort(finish)
	b.ReportMetric(takeover[len(takeover)/2].Seconds(), "p50-takeover-s")
	b.ReportMetric(finish[len(finish)/2].Seconds(), "p50-kill-to-done-s")
}
