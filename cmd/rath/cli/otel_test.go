package cli

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorath/rath/telemetry"
	"github.com/gorath/rath/telemetry/otlptest"
)

// runExampleCassette records "rath run" of the repository's example cassette and
// returns the run id.
func runExampleCassette(t *testing.T, dir string) string {
	t.Helper()
	cas, err := filepath.Abs("../../../examples/cassettes/write_and_check.json")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	out := mustRun(t, dir, "run", "--cassette", cas, "--workspace", work, "--tools", "all", "Write hello.txt")
	m := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in:\n%s", out)
	}
	return m[1]
}

func spanNames(spans map[string]otlptest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

func TestOtel_RunExportsLiveAndExportMatches(t *testing.T) {
	rec, endpoint := otlptest.StartHTTP(t)
	otlptest.Env(t, endpoint, telemetry.ProtocolHTTP)
	dir := t.TempDir()
	id := runExampleCassette(t, dir)

	live := rec.Spans()
	want := []string{"chat", "chat", "chat", "execute_tool run_shell_command",
		"execute_tool write_workspace_file", "invoke_agent root", "invoke_workflow " + runWorkflow}
	if diff := cmp.Diff(want, spanNames(live)); diff != "" {
		t.Fatalf("spans sent live by rath run (-want +got):\n%s", diff)
	}
	for _, s := range live {
		if s.Trace != telemetry.TraceID(id).String() || s.Attrs["rath.run.id"] != id {
			t.Errorf("%s: trace %s run %q, want the run's", s.Name, s.Trace, s.Attrs["rath.run.id"])
		}
		if strings.HasPrefix(s.Name, "execute_tool") && s.Attrs["rath.sandbox.backend"] != "local" {
			t.Errorf("%s: sandbox backend %q, want local", s.Name, s.Attrs["rath.sandbox.backend"])
		}
	}

	rec.Reset()
	out := mustRun(t, dir, "otel", "export", id)
	if want := id + "\t" + telemetry.TraceID(id).String() + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if diff := cmp.Diff(live, rec.Spans()); diff != "" {
		t.Errorf("export from the log differs from the live export (-live +export):\n%s", diff)
	}
	type exported struct {
		Run     string `json:"run"`
		TraceID string `json:"trace_id"`
	}
	got := decodeJSON[[]exported](t, mustRun(t, dir, "otel", "export", "--json", id))
	if len(got) != 1 || got[0] != (exported{Run: id, TraceID: telemetry.TraceID(id).String()}) {
		t.Errorf("--json: %+v", got)
	}
}

func TestOtel_ExportErrors(t *testing.T) {
	rec, endpoint := otlptest.StartHTTP(t)
	otlptest.Env(t, "", "")
	dir := t.TempDir()
	id := runExampleCassette(t, dir)
	if n := len(rec.Spans()); n != 0 {
		t.Fatalf("%d spans sent with no endpoint set", n)
	}

	r := rathCLI(t, dir, "otel", "export", id)
	if r.code != 1 || !strings.Contains(r.stderr, "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("export without an endpoint: exit %d, stderr %q", r.code, r.stderr)
	}

	otlptest.Env(t, endpoint, telemetry.ProtocolHTTP)
	r = rathCLI(t, dir, "otel", "export", id, "run-nope")
	if r.code != 1 || !strings.Contains(r.stderr, "run not found") || !strings.Contains(r.stderr, "run-nope") {
		t.Errorf("unknown run: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := len(rec.Spans()); n != 0 {
		t.Errorf("%d spans sent although a run was unknown", n)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	r = rathCLI(t, dir, "otel", "export", id)
	if r.code != 1 || !strings.Contains(r.stderr, "unsupported OTLP protocol") {
		t.Errorf("json protocol: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := rathCLI(t, dir, "otel", "export"); r.code != 2 {
		t.Errorf("no run: exit %d, want 2", r.code)
	}
}

// With --capture-content the transcript is exported, but never the value
// of a variable named like a key, even where the model echoed it.
func TestOtel_CaptureContentRedactsEnvSecrets(t *testing.T) {
	rec, endpoint := otlptest.StartHTTP(t)
	otlptest.Env(t, "", "")
	dir := t.TempDir()
	id := runExampleCassette(t, dir)
	// The cassette writes "hello from rath" to a file: pretend that was a key.
	t.Setenv("EXAMPLE_API_KEY", "hello from rath")
	otlptest.Env(t, endpoint, telemetry.ProtocolHTTP)
	mustRun(t, dir, "otel", "export", "--capture-content", id)
	redacted := false
	for _, s := range rec.Spans() {
		for k, v := range s.Attrs {
			if strings.Contains(v, "hello from rath") {
				t.Errorf("%s: %s holds the secret: %s", s.Name, k, v)
			}
			redacted = redacted || strings.Contains(v, telemetry.Redacted)
		}
		if s.Name == "execute_tool write_workspace_file" && s.Attrs["gen_ai.tool.call.arguments"] == "" {
			t.Errorf("tool arguments not exported with --capture-content: %v", s.Attrs)
		}
	}
	if !redacted {
		t.Error("nothing was redacted: the secret never reached the exporter, so the test proves nothing")
	}
}
