package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath"
	"github.com/gorath/rath/telemetry"
	"github.com/spf13/cobra"
)

func newOtelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "otel",
		Short: "OpenTelemetry: export runs as GenAI spans and metrics over OTLP",
		Long: `rath exports runs to any OpenTelemetry collector or backend that reads
OTLP (Jaeger, Tempo, Honeycomb, Datadog, Langfuse, Phoenix, ...). It is
configured by the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT (or the
per-signal OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _METRICS_ENDPOINT),
OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default, or grpc),
OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES.

With an endpoint set, "rath run" exports live. "rath otel export" exports
past runs from the log, with their recorded times; ids derive from the
run id and event seqs, so exporting a run again yields the same trace.
Message content, tool arguments and results are exported only with
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (or
--capture-content), with known secrets redacted.`,
		Example: "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 rath otel export run-0123456789abcdef",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newOtelExportCmd(a))
	return cmd
}

func newOtelExportCmd(a *app) *cobra.Command {
	var metrics, content bool
	cmd := &cobra.Command{
		Use:   "export [flags] RUN...",
		Short: "Export past runs from the log as OpenTelemetry spans (prints RUN TRACE_ID per run)",
		Long: `export reads each run's events and sends its spans to the OTLP endpoint
configured by the environment: invoke_workflow for the run, invoke_agent
for each workflow, chat for each model call, execute_tool for each tool
call, with the recorded start and end times. The trace id of a run is
derived from its id, so a run exported live and again later is one trace.

Metric points carry the time they are sent, not the run's, so they are
sent only with --metrics. A run without run.finished (a crash) is
exported with its open spans ended at its last event, marked
rath.incomplete.`,
		Example: `OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 rath otel export run-0123456789abcdef
OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc rath otel export --metrics $(rath runs --json | jq -r '.[].id')`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, runs []string) error {
			ctx := cmd.Context()
			s, err := telemetry.SettingsFromEnv(nil)
			if err != nil {
				return err
			}
			if !s.Traces {
				return errors.New("otel export: no OTLP endpoint for traces: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)")
			}
			s.Metrics = s.Metrics && metrics
			s.CaptureContent = s.CaptureContent || content
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			p, err := telemetry.FromSettings(ctx, s)
			if err != nil {
				return err
			}
			st, err := telemetry.ExportRuns(ctx, rt.Store(), p, runs...)
			if err = errors.Join(err, p.Shutdown(context.WithoutCancel(ctx))); err != nil {
				return fmt.Errorf("otel export: %w", err)
			}
			type exported struct {
				Run     string `json:"run"`
				TraceID string `json:"trace_id"`
			}
			out := make([]exported, len(runs))
			for i, r := range runs {
				out[i] = exported{Run: r, TraceID: telemetry.TraceID(r).String()}
			}
			fmt.Fprintf(a.stderr, "exported %s (%s, %d incomplete)\n", plural(st.Runs, "run"), plural(st.Spans, "span"), st.Incomplete)
			if a.json {
				return a.printJSON(out)
			}
			for _, e := range out {
				fmt.Fprintf(a.stdout, "%s\t%s\n", e.Run, e.TraceID)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&metrics, "metrics", false, "also send metric points (token usage, durations, tool calls, run outcomes), stamped with the export's time")
	fl.BoolVar(&content, "capture-content", false, "export message content, tool arguments and results (like OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)")
	jsonFlag(cmd, a)
	return cmd
}

// liveTelemetry starts exporting rt's new events when the environment
// names an OTLP endpoint; the returned stop flushes. With none set it
// starts nothing.
func (a *app) liveTelemetry(ctx context.Context, rt *rath.Runtime) (stop func(), err error) {
	live, err := telemetry.StartFromEnv(ctx, rt.Store())
	if err != nil {
		return nil, err
	}
	return func() {
		if err := live.Close(ctx); err != nil {
			fmt.Fprintf(a.stderr, "otel: %v\n", err)
		}
	}, nil
}
