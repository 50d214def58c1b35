package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names: the GenAI conventions' client metrics, and rath's counters.
const (
	MetricTokenUsage = "gen_ai.client.token.usage"
	MetricDuration   = "gen_ai.client.operation.duration"
	MetricToolCalls  = "rath.tool.calls"
	MetricRuns       = "rath.runs"
)

// The conventions' advised bucket boundaries.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

type instruments struct {
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	tools    metric.Int64Counter
	runs     metric.Int64Counter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var err error
	if in.tokens, err = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", MetricTokenUsage, err)
	}
	if in.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", MetricDuration, err)
	}
	if in.tools, err = m.Int64Counter(MetricToolCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls made by agents, by tool and error type.")); err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", MetricToolCalls, err)
	}
	if in.runs, err = m.Int64Counter(MetricRuns, metric.WithUnit("{run}"),
		metric.WithDescription("Finished runs, by workflow and status.")); err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", MetricRuns, err)
	}
	return &in, nil
}

// chat records one model call (all its attempts) on the client metrics.
func (in *instruments) chat(ctx context.Context, provider, reqModel, respModel, errType string, input, output int64, d time.Duration) {
	if in == nil {
		return
	}
	attrs := []attribute.KeyValue{keyOperation.String(opChat), keyProvider.String(provider)}
	if reqModel != "" {
		attrs = append(attrs, keyRequestModel.String(reqModel))
	}
	if respModel != "" {
		attrs = append(attrs, keyResponseModel.String(respModel))
	}
	if errType != "" {
		in.duration.Record(ctx, d.Seconds(), metric.WithAttributes(append(attrs, keyErrorType.String(errType))...))
		return
	}
	in.duration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	in.tokens.Record(ctx, input, metric.WithAttributes(append(attrs, keyTokenType.String("input"))...))
	in.tokens.Record(ctx, output, metric.WithAttributes(append(attrs, keyTokenType.String("output"))...))
}

func (in *instruments) tool(ctx context.Context, name, backend, errType string) {
	if in == nil {
		return
	}
	attrs := []attribute.KeyValue{keyToolName.String(name)}
	if backend != "" {
		attrs = append(attrs, keyBackend.String(backend))
	}
	if errType != "" {
		attrs = append(attrs, keyErrorType.String(errType))
	}
	in.tools.Add(ctx, 1, metric.WithAttributes(attrs...))
}

func (in *instruments) run(ctx context.Context, workflow, status string) {
	if in == nil {
		return
	}
	in.runs.Add(ctx, 1, metric.WithAttributes(keyAgentName.String(workflow), keyRunStatus.String(status)))
}
