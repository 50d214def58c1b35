package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/telemetry"
)

// Span kinds of the waterfall: the OpenTelemetry export's operations,
// and the approval waits the console adds.
const (
	SpanWorkflow = "workflow" // invoke_workflow: the run
	SpanAgent    = "agent"    // invoke_agent: one workflow's forward
	SpanChat     = "chat"     // chat: one model call, all its attempts
	SpanTool     = "tool"     // execute_tool: one tool call
	SpanApproval = "approval" // a tool call or question waiting for a person
)

// SpanView is one bar of the run's trace waterfall.
type SpanView struct {
	ID     string `json:"id"`
	Parent string `json:"parent,omitempty"`
	Depth  int    `json:"depth"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	// StartMS and EndMS are from the run's start.
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms"`
	// Seq is the event that opened the span, EndSeq the one that closed
	// it (a chat span's provider.called: the inspector's key).
	Seq    int64 `json:"seq,omitempty"`
	EndSeq int64 `json:"end_seq,omitempty"`
	// Error is the span's error status; Incomplete says its end was never
	// recorded (running, waiting, or crashed).
	Error      string `json:"error,omitempty"`
	Incomplete bool   `json:"incomplete,omitempty"`
	// Attempts is a model call's attempts (retries are Marks).
	Attempts int               `json:"attempts,omitempty"`
	Attrs    map[string]string `json:"attrs,omitempty"`
	Marks    []SpanMark        `json:"marks,omitempty"`
}

// SpanMark is a point on a bar: a failed attempt, a capped agent, a
// selector's choice.
type SpanMark struct {
	Name string            `json:"name"`
	AtMS float64           `json:"at_ms"`
	Text map[string]string `json:"attrs,omitempty"`
}

// TraceView is GET /api/runs/{id}/trace: the waterfall (spans in
// depth-first order, children by start), the run's model calls and the
// per-agent usage, as in the dossier.
type TraceView struct {
	StartedAt time.Time            `json:"started_at"`
	TotalMS   float64              `json:"total_ms"`
	Spans     []SpanView           `json:"spans"`
	Agents    []dossier.AgentUsage `json:"agents"`
	Calls     []CallSummary        `json:"calls"`
}

// CallSummary is one model call attempt without its messages.
type CallSummary struct {
	Seq       int64  `json:"seq"`
	Agent     string `json:"agent,omitempty"`
	Model     string `json:"model"`
	Attempt   int    `json:"attempt"`
	Tokens    int64  `json:"tokens"`
	LatencyMS int64  `json:"latency_ms"`
	Failed    bool   `json:"failed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// spanRecorder keeps the spans an export ends, in memory.
type spanRecorder struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (r *spanRecorder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, spans...)
	return nil
}

func (r *spanRecorder) Shutdown(context.Context) error { return nil }

// exportedSpans runs the OpenTelemetry export of one run into memory: the
// waterfall is the same span tree a tracing backend receives. Content is
// not captured, so no message text, argument or result is in a span.
func (s *Server) exportedSpans(ctx context.Context, runID string) ([]sdktrace.ReadOnlySpan, error) {
	rec := &spanRecorder{}
	p, err := telemetry.NewPipeline(ctx, telemetry.PipelineOptions{SpanExporter: rec, Resource: resource.Empty()})
	if err != nil {
		return nil, err
	}
	defer p.Shutdown(context.WithoutCancel(ctx))
	if _, err := telemetry.ExportRuns(ctx, s.rt.Store(), p, runID); err != nil {
		return nil, err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), rec.spans...), nil
}

func (s *Server) apiRunTrace(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := s.reader(ctx).Run(ctx, id); notFound(w, err) {
		return
	}
	s.heavy.Lock()
	v, err := s.traceOf(ctx, id)
	s.heavy.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "trace: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) traceOf(ctx context.Context, id string) (TraceView, error) {
	spans, err := s.exportedSpans(ctx, id)
	if err != nil {
		return TraceView{}, err
	}
	d, err := dossier.Build(ctx, s.rt, id, dossier.Options{SkipVerify: true})
	if err != nil {
		return TraceView{}, err
	}
	v := TraceView{Spans: []SpanView{}, Agents: d.Agents, Calls: []CallSummary{}}
	if v.Agents == nil {
		v.Agents = []dossier.AgentUsage{}
	}
	for _, c := range d.Providers {
		v.Calls = append(v.Calls, CallSummary{Seq: c.Seq, Agent: c.Agent, Model: c.Model, Attempt: c.Attempt, Tokens: c.Usage.TotalTokens,
			LatencyMS: c.LatencyMS, Failed: c.Failed, Error: c.Error})
	}
	if len(spans) == 0 {
		return v, nil
	}
	t0 := spans[0].StartTime()
	for _, sp := range spans {
		if sp.StartTime().Before(t0) {
			t0 = sp.StartTime()
		}
	}
	v.StartedAt = t0.UTC()
	ms := func(t time.Time) float64 { return float64(t.Sub(t0).Microseconds()) / 1000 }
	views := map[string]*SpanView{}
	byCall := map[string]string{} // session + call id -> tool span id
	var order []*SpanView
	for _, sp := range spans {
		sv := &SpanView{ID: sp.SpanContext().SpanID().String(), Name: sp.Name(), StartMS: ms(sp.StartTime()), EndMS: ms(sp.EndTime())}
		if p := sp.Parent(); p.IsValid() {
			sv.Parent = p.SpanID().String()
		}
		if sp.Status().Code == codes.Error {
			sv.Error = sp.Status().Description
		}
		attrs := map[string]attribute.Value{}
		for _, kv := range sp.Attributes() {
			attrs[string(kv.Key)] = kv.Value
		}
		sv.Kind = spanKind(attrs["gen_ai.operation.name"].AsString())
		sv.Seq, sv.EndSeq = attrs["rath.event.seq"].AsInt64(), attrs["rath.event.end_seq"].AsInt64()
		sv.Incomplete = attrs["rath.incomplete"].AsBool()
		sv.Attempts = int(attrs["rath.provider.attempts"].AsInt64())
		sv.Attrs = shownAttrs(attrs)
		for _, e := range sp.Events() {
			m := SpanMark{Name: e.Name, AtMS: ms(e.Time), Text: map[string]string{}}
			for _, kv := range e.Attributes {
				m.Text[string(kv.Key)] = kv.Value.String()
			}
			sv.Marks = append(sv.Marks, m)
		}
		if sv.Kind == SpanTool {
			byCall[attrs["rath.session.id"].AsString()+"\x00"+attrs["gen_ai.tool.call.id"].AsString()] = sv.ID
		}
		views[sv.ID] = sv
		order = append(order, sv)
	}
	// A wait for a person is a bar of its own under the call it holds (or
	// the run): from the request to the decision, or to now.
	now := s.opts.Now()
	var root string
	for _, sv := range order {
		if sv.Parent == "" {
			root = sv.ID
		}
	}
	for i, a := range d.Approvals {
		end, incomplete := a.DecidedAt, false
		if a.DecidedAt.IsZero() {
			end, incomplete = now, true
		}
		parent := byCall[a.Session+"\x00"+a.CallID]
		if parent == "" {
			parent = root
		}
		name := "approval " + a.Tool
		if a.Kind != "tool" {
			name = "question"
		}
		sv := &SpanView{ID: "approval-" + strconv.Itoa(i), Parent: parent, Kind: SpanApproval, Name: name, StartMS: ms(a.RequestedAt), EndMS: ms(end),
			Seq: a.RequestedSeq, EndSeq: a.DecidedSeq, Incomplete: incomplete, Attrs: map[string]string{"status": a.Status, "approval": a.ID}}
		if a.By != "" {
			sv.Attrs["by"] = a.By
		}
		views[sv.ID] = sv
		order = append(order, sv)
	}
	children := map[string][]*SpanView{}
	var roots []*SpanView
	for _, sv := range order {
		if _, ok := views[sv.Parent]; sv.Parent != "" && ok {
			children[sv.Parent] = append(children[sv.Parent], sv)
		} else {
			roots = append(roots, sv)
		}
		v.TotalMS = max(v.TotalMS, sv.EndMS)
	}
	byStart := func(xs []*SpanView) {
		sort.SliceStable(xs, func(i, j int) bool {
			if xs[i].StartMS != xs[j].StartMS {
				return xs[i].StartMS < xs[j].StartMS
			}
			return xs[i].Seq < xs[j].Seq
		})
	}
	var walk func(sv *SpanView, depth int)
	walk = func(sv *SpanView, depth int) {
		sv.Depth = depth
		v.Spans = append(v.Spans, *sv)
		kids := children[sv.ID]
		byStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	byStart(roots)
	for _, sv := range roots {
		walk(sv, 0)
	}
	return v, nil
}

func spanKind(op string) string {
	switch op {
	case "invoke_workflow":
		return SpanWorkflow
	case "invoke_agent":
		return SpanAgent
	case "chat":
		return SpanChat
	case "execute_tool":
		return SpanTool
	}
	return op
}

// shownAttrs are the attributes a bar's tooltip shows.
var shownKeys = map[string]string{
	"gen_ai.agent.name": "agent", "gen_ai.request.model": "model", "gen_ai.response.model": "response model",
	"gen_ai.usage.input_tokens": "input tokens", "gen_ai.usage.output_tokens": "output tokens",
	"gen_ai.tool.name": "tool", "gen_ai.tool.call.id": "call", "rath.tool.exit_code": "exit",
	"error.type": "error", "rath.workflow.path": "path", "rath.run.status": "status", "rath.sandbox.backend": "backend",
}

func shownAttrs(attrs map[string]attribute.Value) map[string]string {
	out := map[string]string{}
	for k, name := range shownKeys {
		if v, ok := attrs[k]; ok {
			out[name] = v.String()
		}
	}
	return out
}

// CallView is GET /api/runs/{id}/calls/{seq}: one model call (its
// provider.called, or a last provider.failed) with the attempts that
// failed before it, the rendered request and the response.
type CallView struct {
	Call     *dossier.ProviderCall   `json:"call"`
	Attempts []*dossier.ProviderCall `json:"attempts"`
}

func (s *Server) apiRunCall(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq <= 0 {
		writeError(w, http.StatusBadRequest, "call: %q is not an event seq", r.PathValue("seq"))
		return
	}
	if _, err := s.reader(ctx).Run(ctx, id); notFound(w, err) {
		return
	}
	s.heavy.Lock()
	d, err := dossier.Build(ctx, s.rt, id, dossier.Options{SkipVerify: true})
	s.heavy.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "call: %v", err)
		return
	}
	v, err := callOf(d, seq)
	if err != nil {
		writeError(w, http.StatusNotFound, "%v", err)
		return
	}
	from := seq
	if len(v.Attempts) > 0 {
		from = v.Attempts[0].Seq
	}
	if !s.viewed(w, r, access.Viewed{Run: id, FromSeq: from, ToSeq: seq, What: events.ViewedModelCall}) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// callOf finds the call whose last attempt is at seq, and the failed
// attempts of the same agent on the same session just before it.
func callOf(d *dossier.Dossier, seq int64) (CallView, error) {
	for i, c := range d.Providers {
		if c.Seq != seq {
			continue
		}
		v := CallView{Call: c, Attempts: []*dossier.ProviderCall{}}
		for j := i - 1; j >= 0; j-- {
			p := d.Providers[j]
			if p.Session != c.Session || p.Agent != c.Agent || !p.Failed || !p.WillRetry {
				break
			}
			v.Attempts = append([]*dossier.ProviderCall{p}, v.Attempts...)
		}
		return v, nil
	}
	return CallView{}, fmt.Errorf("call: no model call at seq %d of run %s", seq, d.Run.ID)
}
