package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/telemetry"
)

func exportToMemory(t *testing.T, log telemetry.RunReader, content bool, secrets []string, runs ...string) tracetest.SpanStubs {
	t.Helper()
	ctx := context.Background()
	mem := tracetest.NewInMemoryExporter()
	p, err := telemetry.NewPipeline(ctx, telemetry.PipelineOptions{SpanExporter: mem, CaptureContent: content, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	if _, err := telemetry.ExportRuns(ctx, log, p, runs...); err != nil {
		t.Fatal(err)
	}
	return mem.GetSpans()
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// spansByName groups spans by name, each group in start order.
func spansByName(spans tracetest.SpanStubs) map[string][]tracetest.SpanStub {
	m := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = append(m[s.Name], s)
	}
	for _, g := range m {
		for i := 1; i < len(g); i++ {
			for j := i; j > 0 && g[j].StartTime.Before(g[j-1].StartTime); j-- {
				g[j], g[j-1] = g[j-1], g[j]
			}
		}
	}
	return m
}

func one(t *testing.T, m map[string][]tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	if len(m[name]) != 1 {
		t.Fatalf("%d spans named %q, want 1 (have %v)", len(m[name]), name, sortedKeys(m))
	}
	return m[name][0]
}

func TestExportRuns_SpanTree(t *testing.T) {
	rt := openRuntime(t)
	run := recordRun(t, rt)
	evs := bySeq(t, rt, run.ID)
	spans := exportToMemory(t, rt.Store(), false, nil, run.ID)
	m := spansByName(spans)

	counts := map[string]int{}
	for n, g := range m {
		counts[n] = len(g)
	}
	want := map[string]int{
		"invoke_workflow fanout": 1, "invoke_agent root": 1, "invoke_agent root.reviewers": 1,
		"invoke_agent root.reviewers.a": 1, "invoke_agent root.reviewers.b": 1, "invoke_agent root.lead": 1,
		"chat scripted": 4, "execute_tool lookup": 1,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Fatalf("span names (-want +got):\n%s", diff)
	}

	runSpan := one(t, m, "invoke_workflow fanout")
	root := one(t, m, "invoke_agent root")
	par := one(t, m, "invoke_agent root.reviewers")
	a := one(t, m, "invoke_agent root.reviewers.a")
	b := one(t, m, "invoke_agent root.reviewers.b")
	lead := one(t, m, "invoke_agent root.lead")
	tool := one(t, m, "execute_tool lookup")

	tid := telemetry.TraceID(run.ID)
	for _, s := range spans {
		if s.SpanContext.TraceID() != tid {
			t.Errorf("%s: trace id %s, want %s", s.Name, s.SpanContext.TraceID(), tid)
		}
	}
	if runSpan.Parent.IsValid() || runSpan.SpanContext.SpanID() != telemetry.RootSpanID(run.ID) {
		t.Errorf("run span: parent %v, id %s; want a root with id %s", runSpan.Parent, runSpan.SpanContext.SpanID(), telemetry.RootSpanID(run.ID))
	}
	parentOf := map[string]tracetest.SpanStub{
		"invoke_agent root": runSpan, "invoke_agent root.reviewers": root, "invoke_agent root.reviewers.a": par,
		"invoke_agent root.reviewers.b": par, "invoke_agent root.lead": root, "execute_tool lookup": a,
	}
	for name, p := range parentOf {
		if got := one(t, m, name).Parent.SpanID(); got != p.SpanContext.SpanID() {
			t.Errorf("%s: parent %s, want %s (%s)", name, got, p.SpanContext.SpanID(), p.Name)
		}
	}
	chatsUnder := map[trace.SpanID][]tracetest.SpanStub{}
	for _, c := range m["chat scripted"] {
		chatsUnder[c.Parent.SpanID()] = append(chatsUnder[c.Parent.SpanID()], c)
		if c.SpanKind != trace.SpanKindClient {
			t.Errorf("chat: kind %v, want client", c.SpanKind)
		}
	}
	for who, n := range map[*tracetest.SpanStub]int{&a: 2, &b: 1, &lead: 1} {
		if got := len(chatsUnder[who.SpanContext.SpanID()]); got != n {
			t.Errorf("%d chat spans under %s, want %d", got, who.Name, n)
		}
	}
	chats := chatsUnder[a.SpanContext.SpanID()] // in start order

	// Every span opens at its event's recorded time (a chat span at the
	// call's start: the record's time less the latency) and closes at
	// the closing event's; ids derive from the opening seq.
	for _, s := range spans {
		at := attrs(s)
		seq := at["rath.event.seq"].AsInt64()
		ev, ok := evs[seq]
		if !ok {
			t.Fatalf("%s: rath.event.seq %d is not an event of the run", s.Name, seq)
		}
		if s.Name != "invoke_workflow fanout" && s.SpanContext.SpanID() != telemetry.SpanIDAt(run.ID, seq) {
			t.Errorf("%s: span id %s, want SpanIDAt(run, %d)", s.Name, s.SpanContext.SpanID(), seq)
		}
		start := ev.At
		if strings.HasPrefix(s.Name, "chat ") {
			p, _ := ev.Decode()
			start = ev.At.Add(-time.Duration(latencyOf(p)) * time.Millisecond)
		}
		if !s.StartTime.Equal(start) {
			t.Errorf("%s: start %v, want %v", s.Name, s.StartTime, start)
		}
		endEv := evs[at["rath.event.end_seq"].AsInt64()]
		if strings.HasPrefix(s.Name, "execute_tool") {
			// A tool span ends after its recorded duration, never after the record.
			if d := at["rath.tool.duration_ms"].AsInt64(); s.EndTime.After(endEv.At) || s.EndTime.Sub(s.StartTime) < time.Duration(d)*time.Millisecond {
				t.Errorf("%s: ends %v (record at %v, duration %d ms)", s.Name, s.EndTime, endEv.At, d)
			}
		} else if !s.EndTime.Equal(endEv.At) {
			t.Errorf("%s: end %v, want the closing event's %v", s.Name, s.EndTime, endEv.At)
		}
	}

	// The retried call: one span, a span event for the failed attempt.
	first := attrs(chats[0])
	checks := map[attribute.Key]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted", "gen_ai.request.model": "scripted",
		"gen_ai.response.model": "scripted-1", "gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(30),
		"rath.provider.attempts": int64(2), "rath.run.id": run.ID, "gen_ai.conversation.id": first["rath.session.id"].AsString(),
		"gen_ai.request.temperature": 0.25, "gen_ai.request.max_tokens": int64(256),
	}
	for k, v := range checks {
		if got := first[k].AsInterface(); got != v {
			t.Errorf("chat: %s = %v, want %v", k, got, v)
		}
	}
	if got := first["gen_ai.response.finish_reasons"].AsStringSlice(); !cmp.Equal(got, []string{"tool_calls"}) {
		t.Errorf("finish reasons %v", got)
	}
	if len(chats[0].Events) != 1 || chats[0].Events[0].Name != "rath.provider.attempt_failed" {
		t.Fatalf("chat events %+v, want one failed attempt", chats[0].Events)
	}
	fa := map[attribute.Key]attribute.Value{}
	for _, kv := range chats[0].Events[0].Attributes {
		fa[kv.Key] = kv.Value
	}
	if fa["error.type"].AsString() != "rate_limit" || !fa["rath.provider.will_retry"].AsBool() {
		t.Errorf("failed attempt attributes %v", chats[0].Events[0].Attributes)
	}
	if _, ok := first["gen_ai.input.messages"]; ok {
		t.Error("message content exported without opt-in")
	}

	ta := attrs(tool)
	if ta["gen_ai.tool.name"].AsString() != "lookup" || ta["gen_ai.tool.call.id"].AsString() != "a1" || ta["gen_ai.operation.name"].AsString() != "execute_tool" {
		t.Errorf("tool attributes %v", tool.Attributes)
	}
	if _, ok := ta["gen_ai.tool.call.arguments"]; ok {
		t.Error("tool arguments exported without opt-in")
	}

	// The fork links each branch to the parallel span, the merge links
	// the parallel span to both branches.
	linkKinds := func(s tracetest.SpanStub) map[trace.SpanID]string {
		out := map[trace.SpanID]string{}
		for _, l := range s.Links {
			for _, kv := range l.Attributes {
				if kv.Key == "rath.link.kind" {
					out[l.SpanContext.SpanID()] = kv.Value.AsString()
				}
			}
		}
		return out
	}
	for _, br := range []tracetest.SpanStub{a, b} {
		if got := linkKinds(br); got[par.SpanContext.SpanID()] != "fork" {
			t.Errorf("%s links %v, want a fork link to %s", br.Name, got, par.SpanContext.SpanID())
		}
	}
	if got := linkKinds(par); got[a.SpanContext.SpanID()] != "merge" || got[b.SpanContext.SpanID()] != "merge" {
		t.Errorf("parallel span links %v, want merge links to both branches", got)
	}
	if runSpan.Status.Code == codes.Error || attrs(runSpan)["rath.run.status"].AsString() != "ok" {
		t.Errorf("run span status %v attrs %v", runSpan.Status, runSpan.Attributes)
	}
}

func latencyOf(p events.Payload) int64 {
	switch e := p.(type) {
	case *events.ProviderCalled:
		return e.LatencyMS
	case *events.ProviderFailed:
		return e.LatencyMS
	}
	return 0
}

func TestExportRuns_IDsStableAcrossExports(t *testing.T) {
	rt := openRuntime(t)
	run := recordRun(t, rt)
	key := func(spans tracetest.SpanStubs) map[string]string {
		m := map[string]string{}
		for _, s := range spans {
			m[s.SpanContext.SpanID().String()] = s.Name + " " + s.Parent.SpanID().String() + " " + s.StartTime.String() + " " + s.EndTime.String()
		}
		return m
	}
	first := key(exportToMemory(t, rt.Store(), false, nil, run.ID))
	second := key(exportToMemory(t, rt.Store(), false, nil, run.ID))
	if len(first) != 11 {
		t.Fatalf("%d distinct span ids, want 11", len(first))
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second export differs (-first +second):\n%s", diff)
	}
}

func TestExportRuns_ContentOnlyWhenAskedAndRedacted(t *testing.T) {
	rt := openRuntime(t)
	run := recordRun(t, rt)
	m := spansByName(exportToMemory(t, rt.Store(), true, []string{leakedSecret}, run.ID))
	var lead tracetest.SpanStub
	for _, c := range m["chat scripted"] {
		if c.Parent.SpanID() == one(t, m, "invoke_agent root.lead").SpanContext.SpanID() {
			lead = c
		}
	}
	at := attrs(lead)
	var out []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type, Content string
		} `json:"parts"`
		FinishReason string `json:"finish_reason"`
	}
	if err := json.Unmarshal([]byte(at["gen_ai.output.messages"].AsString()), &out); err != nil {
		t.Fatalf("output messages %q: %v", at["gen_ai.output.messages"].AsString(), err)
	}
	if len(out) != 1 || out[0].Role != "assistant" || out[0].FinishReason != "stop" || len(out[0].Parts) != 1 ||
		out[0].Parts[0].Content != "approved; the key was "+telemetry.Redacted {
		t.Errorf("output messages %+v", out)
	}
	in := at["gen_ai.input.messages"].AsString()
	if !strings.Contains(in, "Review the login change.") || !strings.Contains(in, `"role":"system"`) {
		t.Errorf("input messages %s", in)
	}
	ta := attrs(one(t, m, "execute_tool lookup"))
	if ta["gen_ai.tool.call.arguments"].AsString() != `{"q":"login"}` || ta["gen_ai.tool.call.result"].AsString() != "found login" {
		t.Errorf("tool content %v", ta)
	}
	for _, s := range exportToMemory(t, rt.Store(), true, []string{leakedSecret}, run.ID) {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), leakedSecret) {
				t.Errorf("%s: %s holds the secret", s.Name, kv.Key)
			}
		}
	}
}

func TestExportRuns_UnknownRun(t *testing.T) {
	rt := openRuntime(t)
	run := recordRun(t, rt)
	mem := tracetest.NewInMemoryExporter()
	ctx := context.Background()
	p, err := telemetry.NewPipeline(ctx, telemetry.PipelineOptions{SpanExporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	_, err = telemetry.ExportRuns(ctx, rt.Store(), p, run.ID, "run-nope")
	if !errors.Is(err, telemetry.ErrRunNotFound) {
		t.Fatalf("err %v, want ErrRunNotFound", err)
	}
	if n := len(mem.GetSpans()); n != 0 {
		t.Errorf("%d spans exported before the unknown run was found", n)
	}
}

// A run whose process died leaves no run.finished: its spans end at the
// last recorded event, marked incomplete, instead of being lost.
func TestExportRuns_CrashedRunEndsIncomplete(t *testing.T) {
	rt := openRuntime(t)
	run := recordRun(t, rt)
	evs, err := rt.Store().ReadRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var cut []events.Event
	for _, ev := range evs {
		if ev.Type == events.TypeRunFinished {
			break
		}
		if ev.Type == events.TypeWorkflowExited && strings.Contains(string(ev.Payload), `"path":"root.lead"`) {
			break
		}
		cut = append(cut, ev)
	}
	log := truncated{Store: rt.Store(), evs: cut}
	m := spansByName(exportToMemory(t, log, false, nil, run.ID))
	runSpan := one(t, m, "invoke_workflow fanout")
	lead := one(t, m, "invoke_agent root.lead")
	last := cut[len(cut)-1].At
	for _, s := range []tracetest.SpanStub{runSpan, lead, one(t, m, "invoke_agent root")} {
		if !attrs(s)["rath.incomplete"].AsBool() || !s.EndTime.Equal(last) {
			t.Errorf("%s: incomplete=%v end %v, want incomplete at %v", s.Name, attrs(s)["rath.incomplete"], s.EndTime, last)
		}
	}
	if attrs(one(t, m, "invoke_agent root.reviewers"))["rath.incomplete"].AsBool() {
		t.Error("a finished span was marked incomplete")
	}
	if !lead.EndTime.Before(runSpan.EndTime) && !lead.EndTime.Equal(runSpan.EndTime) {
		t.Error("child ends after its parent")
	}
}

type truncated struct {
	*eventlog.Store
	evs []events.Event
}

func (l truncated) ReadRun(context.Context, string) ([]events.Event, error) { return l.evs, nil }

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)
