// Package otlptest is an OTLP receiver for tests: it serves OTLP/HTTP and
// OTLP/gRPC on loopback and decodes the official protobuf messages
// (go.opentelemetry.io/proto/otlp), so tests check what an OpenTelemetry
// collector would receive.
package otlptest
