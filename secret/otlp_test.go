package secret_test

import (
	"slices"
	"testing"

	"github.com/gorath/rath/secret"
)

func TestFromEnviron_OTLPHeaders(t *testing.T) {
	got := map[string][]string{}
	for _, s := range secret.FromEnviron([]string{
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20tok-0123456789,x-team = team-abcdefgh",
		"otel_exporter_otlp_traces_headers=api-key=short",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318",
	}) {
		got[s.Name] = append(got[s.Name], s.Value)
	}
	for name, want := range map[string][]string{
		"OTEL_EXPORTER_OTLP_HEADERS":                {"authorization=Bearer%20tok-0123456789,x-team = team-abcdefgh"},
		"OTEL_EXPORTER_OTLP_HEADERS.authorization":  {"Bearer%20tok-0123456789", "Bearer tok-0123456789", "tok-0123456789"},
		"OTEL_EXPORTER_OTLP_HEADERS.x-team":         {"team-abcdefgh"},
		"otel_exporter_otlp_traces_headers":         {"api-key=short"},
		"otel_exporter_otlp_traces_headers.api-key": {"short"}, // too short for a Redactor, kept here
	} {
		if !slices.Equal(got[name], want) {
			t.Errorf("%s: got %q, want %q", name, got[name], want)
		}
	}
	if _, ok := got["OTEL_EXPORTER_OTLP_ENDPOINT"]; ok {
		t.Error("the endpoint is not a secret")
	}
}
