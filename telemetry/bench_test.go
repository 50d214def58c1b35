package telemetry_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
	"github.com/gorath/rath/telemetry"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discard is a span exporter that drops what it gets, so the benchmark
// measures the translation and the SDK, not a network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkExportRun translates a recorded 300-round agent run (one tool
// call per round) into spans: the rate a live exporter must keep up with.
func BenchmarkExportRun(b *testing.B) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	const rounds = 300
	entries := make([]scripted.Entry, 0, rounds+1)
	for i := range rounds {
		entries = append(entries, scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "noop", Arguments: `{}`}}})
	}
	entries = append(entries, scripted.Entry{Content: "done"})
	p, err := flow.ResolveProvider(flow.Provider{Vendor: flow.VendorScripted, Model: "m", Client: scripted.New(entries...)}, flow.ResolveOptions{ConfigPath: "-"})
	if err != nil {
		b.Fatal(err)
	}
	noop, _ := flow.NewTool("noop", "Does nothing.", func(context.Context, *session.Session, struct{}) (string, error) { return "ok", nil })
	agent, err := flow.NewAgent("Loop.", p, flow.WithTools(noop), flow.WithMaxRounds(rounds+1))
	if err != nil {
		b.Fatal(err)
	}
	in, _ := rt.NewUserSession(ctx, "go")
	run, err := rt.Start(ctx, "loop", agent, in)
	if err != nil {
		b.Fatal(err)
	}
	evs, _ := rt.Store().ReadRun(ctx, run.ID)
	pl, err := telemetry.NewPipeline(ctx, telemetry.PipelineOptions{SpanExporter: discard{}, Batch: true})
	if err != nil {
		b.Fatal(err)
	}
	defer pl.Shutdown(ctx)
	b.ResetTimer()
	var spans int
	for b.Loop() {
		st, err := telemetry.ExportRuns(ctx, rt.Store(), pl, run.ID)
		if err != nil {
			b.Fatal(err)
		}
		spans = st.Spans
	}
	b.ReportMetric(float64(len(evs)*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}
