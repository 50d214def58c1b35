package telemetry_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/telemetry"
	"github.com/gorath/rath/telemetry/otlptest"
)

// A run exported live is the same trace as the run exported from the log
// afterwards: same ids, names, parents, times, attributes and links.
func TestLive_MatchesExportFromLog(t *testing.T) {
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
			ctx := context.Background()
			rt := openRuntime(t)
			live, err := telemetry.StartFromEnv(ctx, rt.Store())
			if err != nil || live == nil {
				t.Fatalf("StartFromEnv: %v, %v", live, err)
			}
			run := recordRun(t, rt)
			if err := live.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got := rec.Spans()
			want := fromStubs(exportToMemory(t, rt.Store(), false, nil, run.ID))
			if len(got) != 11 {
				t.Fatalf("live export sent %d spans, want 11", len(got))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("live spans differ from the log's (-log +live):\n%s", diff)
			}
			if m := rec.Metric(telemetry.MetricRuns); m == nil || len(m.GetSum().GetDataPoints()) != 1 {
				t.Errorf("live metrics: %s = %v", telemetry.MetricRuns, m)
			}
		})
	}
}

// A run still going when the exporter stops ends as incomplete spans,
// with the ids the finished run will have.
func TestLive_CloseMidRunEndsIncomplete(t *testing.T) {
	rec, endpoint := otlptest.StartHTTP(t)
	otlptest.Env(t, endpoint, telemetry.ProtocolHTTP)
	ctx := context.Background()
	rt := openRuntime(t)
	live, err := telemetry.StartFromEnv(ctx, rt.Store())
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	// Enter a workflow by hand and stop before it exits.
	if _, err := inRun(rt.Store(), "run-open").Append(ctx, "run-open", 0, runStarted("run-open", in.ID())); err != nil {
		t.Fatal(err)
	}
	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.Spans()
	root, ok := got[telemetry.RootSpanID("run-open").String()]
	if !ok || root.Attrs["rath.incomplete"] != "true" {
		t.Fatalf("spans %v: want the open run's root, incomplete", got)
	}
}

// With no endpoint configured nothing is built: no pipeline, no
// subscriber goroutine, and the nil exporter's Close is a no-op.
func TestStartFromEnv_NothingWithoutEndpoint(t *testing.T) {
	otlptest.Env(t, "", "")
	ctx := context.Background()
	rt := openRuntime(t)
	before := runtime.NumGoroutine()
	live, err := telemetry.StartFromEnv(ctx, rt.Store())
	if err != nil || live != nil {
		t.Fatalf("StartFromEnv = %v, %v; want nil, nil", live, err)
	}
	if p, err := telemetry.FromEnv(ctx); p != nil || err != nil {
		t.Fatalf("FromEnv = %v, %v; want nil, nil", p, err)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
	if err := live.Close(ctx); err != nil {
		t.Errorf("nil Close: %v", err)
	}
}

func TestSettingsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want telemetry.Settings
		err  error
	}{
		{"nothing set", nil, telemetry.Settings{TracesProtocol: "http/protobuf", MetricsProtocol: "http/protobuf"}, nil},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			telemetry.Settings{Traces: true, Metrics: true, TracesProtocol: "http/protobuf", MetricsProtocol: "http/protobuf"}, nil},
		{"traces endpoint only, grpc", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			telemetry.Settings{Traces: true, TracesProtocol: "grpc", MetricsProtocol: "grpc"}, nil},
		{"per-signal protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"},
			telemetry.Settings{Traces: true, Metrics: true, TracesProtocol: "grpc", MetricsProtocol: "http/protobuf"}, nil},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "true"}, telemetry.Settings{}, nil},
		{"exporters none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
			telemetry.Settings{TracesProtocol: "http/protobuf", MetricsProtocol: "http/protobuf"}, nil},
		{"content opt-in", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "True"},
			telemetry.Settings{CaptureContent: true, TracesProtocol: "http/protobuf", MetricsProtocol: "http/protobuf"}, nil},
		{"json protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, telemetry.Settings{}, telemetry.ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := telemetry.SettingsFromEnv(func(k string) string { return tc.env[k] })
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if tc.err == nil && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEnvSecrets(t *testing.T) {
	got := telemetry.EnvSecrets([]string{
		"OPENAI_API_KEY=sk-abcdefgh123", "HOME=/home/someone-long", "GITHUB_TOKEN=ghp_0123456789",
		"OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=hc-secret-999,short=abc", "SHORT_KEY=abc",
	})
	want := []string{"sk-abcdefgh123", "ghp_0123456789", "hc-secret-999"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The library exports live through rath.Options.Telemetry, and only when
// asked: the variables alone do not make every runtime export.
func TestRuntimeOption_ExportsWhileOpen(t *testing.T) {
	rec, endpoint := otlptest.StartHTTP(t)
	otlptest.Env(t, endpoint, telemetry.ProtocolHTTP)
	ctx := context.Background()
	for _, opt := range []bool{false, true} {
		rec.Reset()
		rt, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), Telemetry: opt})
		if err != nil {
			t.Fatal(err)
		}
		run := recordRun(t, rt)
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		got := rec.Spans()
		if !opt {
			if len(got) != 0 {
				t.Errorf("Telemetry false: %d spans sent", len(got))
			}
			continue
		}
		if len(got) != 11 {
			t.Fatalf("Telemetry true: %d spans sent, want 11", len(got))
		}
		if _, ok := got[telemetry.RootSpanID(run.ID).String()]; !ok {
			t.Errorf("no root span for %s", run.ID)
		}
	}
}

// Concurrent runs interleave their events in the log; the live exporter
// keeps them apart, and each trace equals its export from the log.
func TestLive_ConcurrentRuns(t *testing.T) {
	rec, endpoint := otlptest.StartHTTP(t)
	otlptest.Env(t, endpoint, telemetry.ProtocolHTTP)
	ctx := context.Background()
	rt := openRuntime(t)
	live, err := telemetry.StartFromEnv(ctx, rt.Store())
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"run-c1", "run-c2", "run-c3"}
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wf := newFanout(t)
		in, err := rt.NewUserSession(ctx, "Review "+id)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := rt.Start(ctx, "fanout", wf, in, rath.WithRunID(id))
			errs <- err
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.Spans()
	want := fromStubs(exportToMemory(t, rt.Store(), false, nil, ids...))
	if len(want) != 33 {
		t.Fatalf("%d spans exported from the log, want 33", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("live spans differ from the log's (-log +live):\n%s", diff)
	}
}
