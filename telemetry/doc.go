// Package telemetry exports rath runs to OpenTelemetry: spans named by the
// GenAI semantic conventions (invoke_workflow for a run, invoke_agent for
// each workflow's forward, chat for each model call, execute_tool for each
// tool call) and the conventions' gen_ai.client.* metrics, sent over OTLP.
//
// Spans are derived from the event log, not from hooks in the flow code:
// one translator turns a run's events into spans, live (Live subscribes to
// the store while the program runs) or after the fact (ExportRuns reads a
// finished run). Span start and end times are the recorded ones, and the
// trace and span ids are derived from the run id and the event seqs, so a
// run exported live and again a year later yields the same trace.
//
// Configuration follows the OpenTelemetry environment variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, headers,
// OTEL_SERVICE_NAME, OTEL_SDK_DISABLED, ...); see FromEnv. When no
// endpoint is set nothing is created: no provider, no subscriber.
// Message content is exported only when
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
package telemetry
