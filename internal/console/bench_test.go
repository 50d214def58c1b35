package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/console"
)

const (
	benchRuns         = 1000
	benchEventsPerRun = 1000 // 1,000,000 events in all
)

// benchStore records benchRuns runs of benchEventsPerRun events each (a
// run.started, a session with its chunks, a run.finished), one batched
// append per run from 8 writers at once, so the group commit batches them.
func benchStore(b *testing.B) *rath.Runtime {
	b.Helper()
	start := time.Now()
	rt, err := rath.OpenWith(context.Background(), rath.Options{Dir: b.TempDir(), Store: rath.StoreOptions{Synchronous: "NORMAL"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	var wg sync.WaitGroup
	errs := make(chan error, benchRuns)
	jobs := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs <- appendRun(rt, i)
			}
		}()
	}
	for i := range benchRuns {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("store: %d runs, %d events in %v", benchRuns, benchRuns*benchEventsPerRun, time.Since(start).Round(time.Millisecond))
	return rt
}

func appendRun(rt *rath.Runtime, i int) error {
	id, sid := fmt.Sprintf("run-bench%06d", i), fmt.Sprintf("s-bench%06d", i)
	ctx := context.Background()
	session := []events.Payload{events.SessionCreated{Session: sid, Origin: "user",
		Chunks: []events.Chunk{{Role: events.RoleUser, Content: "question " + id}}}}
	for j := int64(1); j <= benchEventsPerRun-3; j++ {
		session = append(session, events.ChunkAppended{Session: sid, Index: j,
			Chunk: events.Chunk{Role: events.RoleAssistant, Content: fmt.Sprintf("answer %d of %s, long enough to look like text", j, id)}})
	}
	status := rath.RunOK
	if i%10 == 0 {
		status = rath.RunError
	}
	_, err := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: id, Seed: "seed"}}).AppendWrites(ctx,
		eventlog.Write{Stream: id, Expected: eventlog.NoStream, Events: []events.Payload{
			events.RunStarted{Run: id, Workflow: fmt.Sprintf("wf-%d", i%7), InputSession: sid, Seed: "seed", CodeVersion: "bench"},
			events.RunFinished{Run: id, Status: status, OutputSession: sid},
		}},
		eventlog.Write{Stream: sid, Expected: eventlog.NoStream, Events: session})
	return err
}

// BenchmarkRunsList measures GET /api/runs (and the other paged reads)
// through the handler, on a store of 1,000 runs and 200,000 events.
func BenchmarkRunsList(b *testing.B) {
	rt := benchStore(b)
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, bc := range []struct{ name, path string }{
		{"FirstPage", "/api/runs?limit=50"},
		{"DeepPage", "/api/runs?limit=50&before=100000"},
		{"StatusFilter", "/api/runs?limit=50&status=failed"},
		{"Search", "/api/runs?limit=50&q=wf-3"},
		{"Run", "/api/runs/run-bench000500"},
		{"RunEventsPage", "/api/runs/run-bench000500/events?limit=200"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("GET", bc.path, nil)
				req.Host = "127.0.0.1:7777"
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", bc.path, rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/req")
		})
	}
}
