package eval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// recordBenchRuns appends n finished runs of 20 events each: a user
// session, three rounds of a model call that calls a tool and the tool's
// result, and a final answer.
func recordBenchRuns(b *testing.B, rt *rath.Runtime, n int) {
	b.Helper()
	for i := range n {
		run, sess := fmt.Sprintf("run-bench-%04d", i), fmt.Sprintf("s-bench-%04d", i)
		ctx := context.Background()
		evs := []events.Payload{&events.SessionCreated{Session: sess, Origin: "user", Chunks: []events.Chunk{{Role: events.RoleUser, Content: fmt.Sprintf("question %d", i)}}}}
		index := int64(1)
		call := func(c events.Chunk) {
			evs = append(evs, &events.ProviderCalled{Session: sess, Agent: "root", Model: "m", Usage: events.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}, LatencyMS: 5, Attempt: 1},
				&events.ChunkAppended{Session: sess, Index: index, Chunk: c})
			index++
		}
		for r := range 3 {
			id := fmt.Sprintf("c%d", r)
			call(events.Chunk{Role: events.RoleAssistant, Author: "root", ToolCalls: []events.ToolCall{{ID: id, Name: "list_files", Arguments: `{}`}}})
			evs = append(evs, &events.ToolCalled{Session: sess, CallID: id, Tool: "list_files", Arguments: `{}`},
				&events.ToolReturned{Session: sess, CallID: id, Tool: "list_files", OutputRef: eventlog.BlobHash([]byte("a.go")), OutputSize: 4},
				&events.ChunkAppended{Session: sess, Index: index, Chunk: events.Chunk{Role: events.RoleToolResult, ToolCallID: id, Name: "list_files", Content: "a.go"}})
			index++
		}
		call(events.Chunk{Role: events.RoleAssistant, Author: "root", Content: fmt.Sprintf("answer %d: done", i)})
		_, err := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: run, Seed: "bench"}}).AppendWrites(ctx,
			eventlog.Write{Stream: run, Expected: eventlog.NoStream, Events: []events.Payload{&events.RunStarted{Run: run, Workflow: "bench", InputSession: sess, Seed: "bench"}}},
			eventlog.Write{Stream: sess, Expected: eventlog.NoStream, Events: evs, Blobs: [][]byte{[]byte("a.go")}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rt.Store().Append(ctx, run, 1, &events.RunFinished{Run: run, Status: rath.RunOK, OutputSession: sess}); err != nil {
			b.Fatal(err)
		}
	}
}

// Re-scoring 1,000 recorded runs of 20 events with 5 deterministic
// scorers: each iteration records 5,000 scores in a new experiment, and
// counts the model calls (none).
func BenchmarkRescore1000Runs(b *testing.B) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	recordBenchRuns(b, rt, 1000)
	ds, err := eval.CreateFromRuns(ctx, rt, "bench", eval.RunSelection{Workflow: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var scorers []eval.Scorer
	for _, spec := range []string{"contains:done", "regex:^answer [0-9]+", "tool_called:list_files", "no_tool_error", "max_tokens:1000"} {
		sc, err := eval.ParseSpec(spec, eval.SpecOptions{})
		if err != nil {
			b.Fatal(err)
		}
		scorers = append(scorers, sc)
	}
	var calls int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := eval.ScoreDataset(ctx, rt, ds, scorers, eval.ScoreOptions{Experiment: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Scores) != 5000 {
			b.Fatalf("%d scores, want 5000", len(res.Scores))
		}
		for _, s := range res.Scores {
			if s.Value != 1 {
				b.Fatalf("score %+v: every bench run passes every scorer", s)
			}
		}
		calls += res.ModelCalls
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/rescore")
	b.ReportMetric(float64(calls), "model-calls")
}
