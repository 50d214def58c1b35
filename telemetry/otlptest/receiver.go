package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP collector for tests: it decodes the official
// protobuf messages received over HTTP (/v1/traces, /v1/metrics) or gRPC
// (the collector's TraceService and MetricsService).
type Receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	colmetricspb.UnimplementedMetricsServiceServer

	mu       sync.Mutex // protects the fields below
	spans    []*tracepb.Span
	services []string // service.name of each resource received
	metrics  []*metricspb.Metric
}

// Reset forgets the spans received so far.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = nil
}

// Services returns the service.name of each trace batch received.
func (r *Receiver) Services() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.services...)
}

func (r *Receiver) addTraces(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				r.services = append(r.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
}

func (r *Receiver) addMetrics(req *colmetricspb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			r.metrics = append(r.metrics, sm.GetMetrics()...)
		}
	}
}

// Export implements the gRPC TraceService.
func (r *Receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.addTraces(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsService adapts receiver to the MetricsService, whose method has
// the same name as the TraceService's.
type metricsService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (m metricsService) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	m.r.addMetrics(req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

// ServeHTTP implements OTLP/HTTP with protobuf bodies.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err == nil && req.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var resp proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var m coltracepb.ExportTraceServiceRequest
		if err = proto.Unmarshal(body, &m); err == nil {
			r.addTraces(&m)
		}
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var m colmetricspb.ExportMetricsServiceRequest
		if err = proto.Unmarshal(body, &m); err == nil {
			r.addMetrics(&m)
		}
		resp = &colmetricspb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// StartHTTP serves OTLP/HTTP on loopback and returns its endpoint.
func StartHTTP(t testing.TB) (*Receiver, string) {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// StartGRPC serves OTLP/gRPC on loopback and returns its endpoint.
func StartGRPC(t testing.TB) (*Receiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	colmetricspb.RegisterMetricsServiceServer(srv, metricsService{r: r})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return r, "http://" + lis.Addr().String()
}

// Env points the standard variables at endpoint with protocol, and
// clears the others a developer's shell may hold.
func Env(t testing.TB, endpoint, protocol string) {
	t.Helper()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_EXPORTER_OTLP_COMPRESSION"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_SERVICE_NAME", "rath-test")
}

// Span is a received span in comparable form.
type Span struct {
	Name, Trace, Span, Parent string
	Kind                      tracepb.Span_SpanKind
	Start, End                uint64
	Attrs                     map[string]string
	Links                     map[string]string // span id -> rath.link.kind
	Events                    []string
	Status                    tracepb.Status_StatusCode
}

// Spans returns the spans received, by span id (hex).
func (r *Receiver) Spans() map[string]Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]Span{}
	for _, s := range r.spans {
		w := Span{Name: s.GetName(), Trace: hex.EncodeToString(s.GetTraceId()), Span: hex.EncodeToString(s.GetSpanId()),
			Parent: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind(), Start: s.GetStartTimeUnixNano(), End: s.GetEndTimeUnixNano(),
			Attrs: Flat(s.GetAttributes()), Links: map[string]string{}, Status: s.GetStatus().GetCode()}
		for _, l := range s.GetLinks() {
			w.Links[hex.EncodeToString(l.GetSpanId())] = Flat(l.GetAttributes())["rath.link.kind"]
		}
		for _, e := range s.GetEvents() {
			w.Events = append(w.Events, e.GetName())
		}
		out[w.Span] = w
	}
	return out
}

// Flat renders attributes as strings, by key.
func Flat(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = anyString(kv.GetValue())
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_ArrayValue:
		s := "["
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				s += ","
			}
			s += anyString(e)
		}
		return s + "]"
	}
	return v.String()
}

// Metric returns the received metric named name (the last one: with
// cumulative temporality it holds the totals).
func (r *Receiver) Metric(name string) *metricspb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out *metricspb.Metric
	for _, m := range r.metrics {
		if m.GetName() == name {
			out = m
		}
	}
	return out
}
