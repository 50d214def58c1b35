package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL values).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES do not set one.
const DefaultServiceName = "rath"

// InstrumentationName names the tracer and meter.
const InstrumentationName = "github.com/gorath/rath/telemetry"

// ErrProtocol is returned for an OTLP protocol rath cannot export with.
var ErrProtocol = errors.New("telemetry: unsupported OTLP protocol")

// Settings are what the environment asks for.
type Settings struct {
	Traces          bool   // an OTLP endpoint is set for traces
	Metrics         bool   // an OTLP endpoint is set for metrics
	TracesProtocol  string // ProtocolHTTP or ProtocolGRPC
	MetricsProtocol string
	// CaptureContent exports message content, tool arguments and
	// results (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
	CaptureContent bool
}

// Enabled reports whether anything is to be exported.
func (s Settings) Enabled() bool { return s.Traces || s.Metrics }

// SettingsFromEnv reads the standard OpenTelemetry variables through
// getenv (os.Getenv when nil). A signal is on when an OTLP endpoint is set
// for it (OTEL_EXPORTER_OTLP_ENDPOINT or the signal's own) and its
// exporter is not "none"; OTEL_SDK_DISABLED=true turns everything off.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var s Settings
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return s, nil
	}
	s.CaptureContent = strings.EqualFold(strings.TrimSpace(getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")), "true")
	base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != ""
	on := func(signal string) bool {
		exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER")))
		if exp != "" && exp != "otlp" {
			// "none", or an exporter rath does not ship (console,
			// prometheus): nothing to do over OTLP.
			return false
		}
		return base || strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT")) != ""
	}
	s.Traces, s.Metrics = on("TRACES"), on("METRICS")
	var err error
	if s.TracesProtocol, err = protocol(getenv, "TRACES"); err != nil && s.Traces {
		return s, err
	}
	if s.MetricsProtocol, err = protocol(getenv, "METRICS"); err != nil && s.Metrics {
		return s, err
	}
	return s, nil
}

func protocol(getenv func(string) string, signal string) (string, error) {
	p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"))
	if p == "" {
		p = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil // the specification's default
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("%w %q for %s (want %s or %s)", ErrProtocol, p, strings.ToLower(signal), ProtocolHTTP, ProtocolGRPC)
}

// Pipeline is a tracer provider and a meter provider wired to exporters,
// with the ids rath derives. Its zero value is not usable: build one with
// FromEnv or NewPipeline.
type Pipeline struct {
	tp      *sdktrace.TracerProvider // nil when traces are off
	mp      *sdkmetric.MeterProvider // nil when metrics are off
	tracer  trace.Tracer
	inst    *instruments
	content bool
	scrub   func(string) string
}

// PipelineOptions configure NewPipeline.
type PipelineOptions struct {
	// SpanExporter receives the spans; nil turns traces off.
	SpanExporter sdktrace.SpanExporter
	// MetricReader collects the metrics (a PeriodicReader around an
	// exporter, or a ManualReader in tests); nil turns metrics off.
	MetricReader sdkmetric.Reader
	// Resource describes the exporting process; nil means the SDK's
	// default resource (which reads OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES) with service.name defaulting to "rath".
	Resource *resource.Resource
	// Batch batches spans before export (the default for a long-lived
	// process); false exports each span as it ends.
	Batch bool
	// CaptureContent exports message content, tool arguments and results.
	CaptureContent bool
	// Secrets are strings replaced by [REDACTED] wherever they would be
	// exported (errors, content). FromEnv adds the values of variables
	// whose names say key, token, secret or password, and OTLP headers.
	Secrets []string
}

// FromEnv builds a pipeline from the standard OpenTelemetry environment
// variables (see SettingsFromEnv). It returns nil, nil when no endpoint is
// set: nothing is created.
func FromEnv(ctx context.Context) (*Pipeline, error) {
	s, err := SettingsFromEnv(nil)
	if err != nil {
		return nil, err
	}
	return FromSettings(ctx, s)
}

// FromSettings builds a pipeline for the signals s turns on, with OTLP
// exporters configured by the environment; nil, nil when s turns none on.
// A command that exports past runs turns metrics off unless asked: metric
// points carry the export's time, not the run's.
func FromSettings(ctx context.Context, s Settings) (*Pipeline, error) {
	if !s.Enabled() {
		return nil, nil
	}
	var err error
	opts := PipelineOptions{Batch: true, CaptureContent: s.CaptureContent, Secrets: EnvSecrets(os.Environ())}
	if s.Traces {
		if opts.SpanExporter, err = newSpanExporter(ctx, s.TracesProtocol); err != nil {
			return nil, err
		}
	}
	if s.Metrics {
		exp, err := newMetricExporter(ctx, s.MetricsProtocol)
		if err != nil {
			if opts.SpanExporter != nil {
				_ = opts.SpanExporter.Shutdown(ctx)
			}
			return nil, err
		}
		// The reader's interval comes from OTEL_METRIC_EXPORT_INTERVAL.
		opts.MetricReader = sdkmetric.NewPeriodicReader(exp)
	}
	return NewPipeline(ctx, opts)
}

func newSpanExporter(ctx context.Context, proto string) (sdktrace.SpanExporter, error) {
	// The exporters read the endpoint, headers, timeout, compression and
	// TLS settings from the environment themselves.
	var exp sdktrace.SpanExporter
	var err error
	if proto == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter (%s): %w", proto, err)
	}
	return exp, nil
}

func newMetricExporter(ctx context.Context, proto string) (sdkmetric.Exporter, error) {
	var exp sdkmetric.Exporter
	var err error
	if proto == ProtocolGRPC {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: metric exporter (%s): %w", proto, err)
	}
	return exp, nil
}

// NewPipeline builds a pipeline around the given exporter and reader.
func NewPipeline(ctx context.Context, opts PipelineOptions) (*Pipeline, error) {
	res := opts.Resource
	if res == nil {
		var err error
		// Later sources win: the default name, then the environment.
		res, err = resource.New(ctx, resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
			resource.WithTelemetrySDK(), resource.WithFromEnv())
		if err != nil {
			return nil, fmt.Errorf("telemetry: resource: %w", err)
		}
	}
	p := &Pipeline{content: opts.CaptureContent, scrub: newScrubber(opts.Secrets), tracer: noop.NewTracerProvider().Tracer(InstrumentationName)}
	if opts.SpanExporter != nil {
		proc := sdktrace.NewSimpleSpanProcessor(opts.SpanExporter)
		if opts.Batch {
			proc = sdktrace.NewBatchSpanProcessor(opts.SpanExporter)
		}
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(proc),
			sdktrace.WithIDGenerator(newIDGenerator()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		p.tracer = p.tp.Tracer(InstrumentationName)
	}
	if opts.MetricReader != nil {
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(opts.MetricReader))
		inst, err := newInstruments(p.mp.Meter(InstrumentationName))
		if err != nil {
			return nil, errors.Join(err, p.Shutdown(ctx))
		}
		p.inst = inst
	}
	return p, nil
}

// TracerProvider returns the pipeline's tracer provider (nil when traces
// are off), for a program that wants its own spans in the same traces.
func (p *Pipeline) TracerProvider() *sdktrace.TracerProvider { return p.tp }

// MeterProvider returns the pipeline's meter provider (nil when metrics
// are off).
func (p *Pipeline) MeterProvider() *sdkmetric.MeterProvider { return p.mp }

func (p *Pipeline) translator(blobs BlobGetter) *translator {
	return &translator{tracer: p.tracer, inst: p.inst, blobs: blobs, content: p.content, scrub: p.scrub, runs: map[string]*runState{}}
}

// ForceFlush exports what is buffered.
func (p *Pipeline) ForceFlush(ctx context.Context) error {
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.ForceFlush(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.ForceFlush(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: flush: %w", err)
	}
	return nil
}

// Shutdown flushes and stops the exporters.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.Shutdown(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}

// minSecret is the shortest value treated as a secret: shorter ones would
// redact ordinary words.
const minSecret = 8

// EnvSecrets returns the values in environ (KEY=VALUE entries) that must
// never be exported: those of variables whose names contain KEY, TOKEN,
// SECRET, PASSWORD or CREDENTIAL, and the values of OTLP header variables.
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < minSecret {
			continue
		}
		uk := strings.ToUpper(k)
		switch {
		case strings.HasPrefix(uk, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(uk, "HEADERS"):
			for _, h := range strings.Split(v, ",") {
				if _, hv, ok := strings.Cut(h, "="); ok && len(strings.TrimSpace(hv)) >= minSecret {
					out = append(out, strings.TrimSpace(hv))
				}
			}
		case strings.Contains(uk, "KEY"), strings.Contains(uk, "TOKEN"), strings.Contains(uk, "SECRET"),
			strings.Contains(uk, "PASSWORD"), strings.Contains(uk, "CREDENTIAL"):
			out = append(out, v)
		}
	}
	return out
}

// Redacted replaces a secret in exported text.
const Redacted = "[REDACTED]"

func newScrubber(secrets []string) func(string) string {
	var pairs []string
	seen := map[string]bool{}
	// Longest first, so a secret containing another is replaced whole.
	sorted := append([]string(nil), secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, s := range sorted {
		if len(s) < minSecret {
			continue
		}
		// Tool arguments and results are JSON: the secret may sit there
		// escaped (\", \\, \u003c), a form the raw bytes do not match.
		for _, f := range []string{s, jsonForm(s, false), jsonForm(s, true)} {
			if !seen[f] {
				seen[f] = true
				pairs = append(pairs, f, Redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return func(s string) string { return s }
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// jsonForm is s as it appears inside a JSON string.
func jsonForm(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	f := strings.TrimSpace(b.String())
	return f[1 : len(f)-1]
}

// shutdownTimeout bounds the final flush when the caller's context is
// already done.
const shutdownTimeout = 10 * time.Second
