package telemetry_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/telemetry"
	"github.com/gorath/rath/telemetry/otlptest"
)

// fromStubs puts spans exported in memory in the form received ones take.
func fromStubs(spans tracetest.SpanStubs) map[string]otlptest.Span {
	out := map[string]otlptest.Span{}
	for _, s := range spans {
		w := otlptest.Span{Name: s.Name, Trace: s.SpanContext.TraceID().String(), Span: s.SpanContext.SpanID().String(),
			Kind: tracepb.Span_SpanKind(s.SpanKind), Start: uint64(s.StartTime.UnixNano()), End: uint64(s.EndTime.UnixNano()),
			Attrs: map[string]string{}, Links: map[string]string{}, Status: tracepb.Status_StatusCode(s.Status.Code)}
		if s.Parent.IsValid() {
			w.Parent = s.Parent.SpanID().String()
		}
		for _, kv := range s.Attributes {
			w.Attrs[string(kv.Key)] = attrString(kv.Value.AsInterface())
		}
		for _, l := range s.Links {
			for _, kv := range l.Attributes {
				if kv.Key == "rath.link.kind" {
					w.Links[l.SpanContext.SpanID().String()] = kv.Value.AsString()
				}
			}
		}
		for _, e := range s.Events {
			w.Events = append(w.Events, e.Name)
		}
		out[w.Span] = w
	}
	return out
}

func attrString(v any) string {
	switch x := v.(type) {
	case []string:
		s := "["
		for i, e := range x {
			if i > 0 {
				s += ","
			}
			s += e
		}
		return s + "]"
	}
	return fmt.Sprint(v)
}

// exportOverOTLP exports the run through a pipeline built from the
// environment and returns what the receiver got from this export.
func exportOverOTLP(t *testing.T, rec *otlptest.Receiver, log telemetry.RunReader, runID string, metrics bool) map[string]otlptest.Span {
	t.Helper()
	ctx := context.Background()
	s, err := telemetry.SettingsFromEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Metrics = s.Metrics && metrics
	p, err := telemetry.FromSettings(ctx, s)
	if err != nil || p == nil {
		t.Fatalf("pipeline %v, %v", p, err)
	}
	rec.Reset()
	st, err := telemetry.ExportRuns(ctx, log, p, runID)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.Spans()
	if len(got) != st.Spans {
		t.Fatalf("receiver got %d spans, the export ended %d", len(got), st.Spans)
	}
	return got
}

func TestOTLP_ExportFromLog(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(testing.TB) (*otlptest.Receiver, string)
	}{
		{telemetry.ProtocolHTTP, otlptest.StartHTTP},
		{telemetry.ProtocolGRPC, otlptest.StartGRPC},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			rec, endpoint := tc.start(t)
			otlptest.Env(t, endpoint, tc.protocol)
			rt := openRuntime(t)
			run := recordRun(t, rt)
			evs := bySeq(t, rt, run.ID)

			first := exportOverOTLP(t, rec, rt.Store(), run.ID, false)
			// What went over the wire is what the translator made, span
			// for span: names, ids, parents, times, attributes, links.
			want := fromStubs(exportToMemory(t, rt.Store(), false, nil, run.ID))
			if diff := cmp.Diff(want, first); diff != "" {
				t.Fatalf("received spans differ from the translator's (-want +got):\n%s", diff)
			}
			// And a second export yields the same ids and times.
			if diff := cmp.Diff(first, exportOverOTLP(t, rec, rt.Store(), run.ID, false)); diff != "" {
				t.Fatalf("second export differs (-first +second):\n%s", diff)
			}
			services := rec.Services()
			if len(services) == 0 || services[0] != "rath-test" {
				t.Errorf("service.name %v, want rath-test from OTEL_SERVICE_NAME", services)
			}

			// Checked on the wire directly: a tool span's parent, ids and
			// recorded start time.
			var tool, agent otlptest.Span
			for _, s := range first {
				switch s.Name {
				case "execute_tool lookup":
					tool = s
				case "invoke_agent root.reviewers.a":
					agent = s
				}
			}
			seq, _ := strconv.ParseInt(tool.Attrs["rath.event.seq"], 10, 64)
			if tool.Parent != agent.Span || tool.Trace != telemetry.TraceID(run.ID).String() ||
				tool.Span != telemetry.SpanIDAt(run.ID, seq).String() || tool.Start != uint64(evs[seq].At.UnixNano()) {
				t.Errorf("tool span %+v (agent %s, tool.called at %v)", tool, agent.Span, evs[seq].At.UnixNano())
			}
			if tool.Attrs["gen_ai.tool.name"] != "lookup" || tool.Attrs["gen_ai.tool.call.id"] != "a1" {
				t.Errorf("tool attributes %v", tool.Attrs)
			}
		})
	}
}

func TestOTLP_Metrics(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(testing.TB) (*otlptest.Receiver, string)
	}{
		{telemetry.ProtocolHTTP, otlptest.StartHTTP},
		{telemetry.ProtocolGRPC, otlptest.StartGRPC},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			rec, endpoint := tc.start(t)
			otlptest.Env(t, endpoint, tc.protocol)
			rt := openRuntime(t)
			run := recordRun(t, rt)
			exportOverOTLP(t, rec, rt.Store(), run.ID, true)

			var input, output, calls int64
			for _, ev := range bySeq(t, rt, run.ID) {
				if ev.Type == events.TypeProviderCalled {
					p, _ := ev.Decode()
					c := p.(*events.ProviderCalled)
					input += c.Usage.PromptTokens
					output += c.Usage.CompletionTokens
					calls++
				}
			}
			tokens := rec.Metric(telemetry.MetricTokenUsage)
			if tokens == nil || tokens.GetUnit() != "{token}" {
				t.Fatalf("no %s metric with unit {token}: %v", telemetry.MetricTokenUsage, tokens)
			}
			sums := map[string]float64{}
			for _, dp := range tokens.GetHistogram().GetDataPoints() {
				sums[otlptest.Flat(dp.GetAttributes())["gen_ai.token.type"]] += dp.GetSum()
			}
			if sums["input"] != float64(input) || sums["output"] != float64(output) {
				t.Errorf("token sums %v, want input %d output %d", sums, input, output)
			}
			dur := rec.Metric(telemetry.MetricDuration)
			var n uint64
			for _, dp := range dur.GetHistogram().GetDataPoints() {
				n += dp.GetCount()
			}
			if dur.GetUnit() != "s" || n != uint64(calls) {
				t.Errorf("%s: unit %q, %d points, want s and %d", telemetry.MetricDuration, dur.GetUnit(), n, calls)
			}
			runs := rec.Metric(telemetry.MetricRuns).GetSum().GetDataPoints()
			if len(runs) != 1 || runs[0].GetAsInt() != 1 || otlptest.Flat(runs[0].GetAttributes())["rath.run.status"] != "ok" {
				t.Errorf("%s points %v", telemetry.MetricRuns, runs)
			}
			tools := rec.Metric(telemetry.MetricToolCalls).GetSum().GetDataPoints()
			if len(tools) != 1 || tools[0].GetAsInt() != 1 || otlptest.Flat(tools[0].GetAttributes())["gen_ai.tool.name"] != "lookup" {
				t.Errorf("%s points %v", telemetry.MetricToolCalls, tools)
			}
		})
	}
}
