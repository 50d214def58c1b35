package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// BlobGetter reads blobs by hash; *eventlog.Store is one.
type BlobGetter interface {
	GetBlob(ctx context.Context, hash string) ([]byte, error)
}

// translator turns events, in seq order, into spans and metric points. It
// keeps one state per run in progress, so a live subscriber can feed it
// the interleaved events of concurrent runs. It is not safe for
// concurrent use: one goroutine feeds it.
type translator struct {
	tracer  trace.Tracer // a no-op tracer when only metrics are exported
	inst    *instruments // nil: no metrics
	blobs   BlobGetter   // nil: no response details, no content
	content bool
	scrub   func(string) string
	runs    map[string]*runState
	spans   int // spans ended, for reports
}

type runState struct {
	id       string
	tid      trace.TraceID
	workflow string
	root     trace.Span
	rootSC   trace.SpanContext
	lastAt   time.Time

	agents map[string][]*openSpan       // by path, innermost last
	chats  map[string]*chatSpan         // by session and agent
	tools  map[string]*openSpan         // by session and call id
	last   map[string]trace.SpanContext // by session: the span that last worked on it
	links  map[string][]trace.Link      // by session: fork and merge links for its next span
	loader *flow.RequestLoader
}

type openSpan struct {
	span    trace.Span
	sc      trace.SpanContext
	path    string
	session string
	start   time.Time
}

type chatSpan struct {
	openSpan
	provider, model string
	attempts        int
}

func (t *translator) handle(ctx context.Context, ev events.Event) error {
	if ev.RunID == "" {
		return nil
	}
	if !handled[ev.Type] {
		if st, ok := t.runs[ev.RunID]; ok {
			st.lastAt = ev.At
		}
		return nil
	}
	p, err := ev.Decode()
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if e, ok := p.(*events.RunStarted); ok {
		t.start(ctx, ev, e)
		return nil
	}
	st := t.state(ctx, ev)
	st.lastAt = ev.At
	switch e := p.(type) {
	case *events.WorkflowEntered:
		t.entered(ctx, st, ev, e)
	case *events.WorkflowExited:
		t.exited(st, ev, e)
	case *events.ProviderCalled:
		t.providerCalled(ctx, st, ev, e)
	case *events.ProviderFailed:
		t.providerFailed(ctx, st, ev, e)
	case *events.ToolCalled:
		t.toolCalled(ctx, st, ev, e)
	case *events.ToolReturned:
		t.toolReturned(ctx, st, ev, e)
	case *events.SessionForked:
		st.linkFrom(e.Session, e.Source, "fork")
	case *events.SessionDetached:
		st.linkFrom(e.Session, e.Source, "detach")
	case *events.SessionCompressed:
		st.linkFrom(e.Session, e.Source, "compress")
	case *events.SessionMerged:
		for _, par := range e.Parents {
			st.linkFrom(e.Session, par.ID, "merge")
		}
	case *events.AgentCapped:
		if s := st.agent(e.Agent); s != nil {
			s.span.AddEvent("rath.agent.capped", trace.WithTimestamp(ev.At), trace.WithAttributes(keyRounds.Int(e.Rounds), keySeq.Int64(ev.Seq)))
		}
	case *events.SelectorDecided:
		if s := st.agent(e.Path); s != nil {
			s.span.AddEvent("rath.selector.decided", trace.WithTimestamp(ev.At), trace.WithAttributes(
				keySelectorChosen.String(e.Chosen), keyCandidates.StringSlice(e.Candidates),
				keyAttempts.Int(e.Attempts), keyReason.String(t.scrub(e.Reason)), keySeq.Int64(ev.Seq)))
		}
	case *events.RunFinished:
		t.finished(ctx, st, ev, e)
	}
	return nil
}

// handled lists the event types the translator reads; others are skipped
// without decoding.
var handled = map[string]bool{
	events.TypeRunStarted: true, events.TypeRunFinished: true,
	events.TypeWorkflowEntered: true, events.TypeWorkflowExited: true,
	events.TypeProviderCalled: true, events.TypeProviderFailed: true,
	events.TypeToolCalled: true, events.TypeToolReturned: true,
	events.TypeSessionForked: true, events.TypeSessionDetached: true,
	events.TypeSessionCompressed: true, events.TypeSessionMerged: true,
	events.TypeAgentCapped: true, events.TypeSelectorDecided: true,
}

func newRunState(id string) *runState {
	return &runState{id: id, tid: TraceID(id),
		agents: map[string][]*openSpan{}, chats: map[string]*chatSpan{}, tools: map[string]*openSpan{},
		last: map[string]trace.SpanContext{}, links: map[string][]trace.Link{}}
}

// startSpan starts a span with derived ids under parent (none for a root).
func (t *translator) startSpan(ctx context.Context, st *runState, parent trace.SpanContext, id trace.SpanID, name string, at time.Time, kind trace.SpanKind, links []trace.Link, attrs ...attribute.KeyValue) (trace.Span, trace.SpanContext) {
	ctx = withIDs(ctx, st.tid, id)
	opts := []trace.SpanStartOption{trace.WithTimestamp(at), trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
	if len(links) > 0 {
		opts = append(opts, trace.WithLinks(links...))
	}
	if parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	_, sp := t.tracer.Start(ctx, name, opts...)
	// The span context is built here, not read from sp, so links and
	// parents are right even when spans are not recorded (metrics only).
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: st.tid, SpanID: id, TraceFlags: trace.FlagsSampled})
	return sp, sc
}

func (t *translator) end(sp trace.Span, at time.Time) {
	sp.End(trace.WithTimestamp(at))
	t.spans++
}

func (t *translator) start(ctx context.Context, ev events.Event, e *events.RunStarted) {
	if _, dup := t.runs[ev.RunID]; dup {
		return
	}
	st := newRunState(ev.RunID)
	st.workflow, st.lastAt = e.Workflow, ev.At
	attrs := []attribute.KeyValue{keyOperation.String(opWorkflow), keyAgentName.String(e.Workflow),
		keyRunID.String(ev.RunID), keySeq.Int64(ev.Seq), keySessionID.String(e.InputSession)}
	if e.CodeVersion != "" {
		attrs = append(attrs, keyCodeVersion.String(e.CodeVersion))
	}
	var links []trace.Link
	if e.ParentRun != "" {
		attrs = append(attrs, keyParentRun.String(e.ParentRun))
		links = append(links, trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: TraceID(e.ParentRun), SpanID: RootSpanID(e.ParentRun), TraceFlags: trace.FlagsSampled}),
			Attributes: []attribute.KeyValue{keyLinkKind.String("parent_run")}})
	}
	st.root, st.rootSC = t.startSpan(ctx, st, trace.SpanContext{}, RootSpanID(ev.RunID), opWorkflow+" "+e.Workflow, ev.At, trace.SpanKindInternal, links, attrs...)
	st.last[e.InputSession] = st.rootSC
	t.runs[ev.RunID] = st
}

// state returns the run's state, opening a root span marked partial when
// the run's start was not seen (a subscriber started mid-run).
func (t *translator) state(ctx context.Context, ev events.Event) *runState {
	if st, ok := t.runs[ev.RunID]; ok {
		return st
	}
	st := newRunState(ev.RunID)
	st.root, st.rootSC = t.startSpan(ctx, st, trace.SpanContext{}, RootSpanID(ev.RunID), opWorkflow, ev.At, trace.SpanKindInternal, nil,
		keyOperation.String(opWorkflow), keyRunID.String(ev.RunID), keySeq.Int64(ev.Seq), keyPartial.Bool(true))
	t.runs[ev.RunID] = st
	return st
}

// agent returns the innermost open workflow span at path.
func (st *runState) agent(path string) *openSpan {
	if s := st.agents[path]; len(s) > 0 {
		return s[len(s)-1]
	}
	return nil
}

// parentOf returns the span a span at path (or a call made by the agent
// at path) belongs under: the innermost open workflow span at path or its
// nearest open ancestor, else the run's root.
func (st *runState) parentOf(path string) trace.SpanContext {
	for p := path; p != ""; {
		if s := st.agent(p); s != nil {
			return s.sc
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return st.rootSC
}

// linkFrom records that session to was derived from session from: the
// next span on to links to the span that last worked on from.
func (st *runState) linkFrom(to, from, kind string) {
	sc, ok := st.last[from]
	if !ok {
		sc = st.rootSC
	}
	st.links[to] = append(st.links[to], trace.Link{SpanContext: sc,
		Attributes: []attribute.KeyValue{keyLinkKind.String(kind), keyLinkSession.String(from)}})
}

func (st *runState) takeLinks(session string) []trace.Link {
	l := st.links[session]
	delete(st.links, session)
	return l
}

func (t *translator) entered(ctx context.Context, st *runState, ev events.Event, e *events.WorkflowEntered) {
	parentPath := ""
	if i := strings.LastIndexByte(e.Path, '.'); i >= 0 {
		parentPath = e.Path[:i]
	}
	parent := st.rootSC
	if parentPath != "" {
		parent = st.parentOf(parentPath)
	}
	sp, sc := t.startSpan(ctx, st, parent, SpanIDAt(st.id, ev.Seq), opAgent+" "+e.Path, ev.At, trace.SpanKindInternal, st.takeLinks(e.Session),
		keyOperation.String(opAgent), keyAgentName.String(e.Path), keyWorkflowPath.String(e.Path), keyWorkflowType.String(e.Workflow),
		keyRunID.String(st.id), keySessionID.String(e.Session), keyConversation.String(e.Session), keySeq.Int64(ev.Seq))
	st.agents[e.Path] = append(st.agents[e.Path], &openSpan{span: sp, sc: sc, path: e.Path, session: e.Session, start: ev.At})
	st.last[e.Session] = sc
}

func (t *translator) exited(st *runState, ev events.Event, e *events.WorkflowExited) {
	stack := st.agents[e.Path]
	i := len(stack) - 1
	for j := len(stack) - 1; j >= 0; j-- {
		if stack[j].session == e.InputSession {
			i = j
			break
		}
	}
	if i < 0 {
		return // entered before the export's window; nothing to close
	}
	s := stack[i]
	st.agents[e.Path] = append(stack[:i:i], stack[i+1:]...)
	if len(st.agents[e.Path]) == 0 {
		delete(st.agents, e.Path)
	}
	for _, l := range st.takeLinks(e.Session) {
		s.span.AddLink(l)
	}
	s.span.SetAttributes(keyOutputSession.String(e.Session), keyEndSeq.Int64(ev.Seq))
	if e.Error != "" {
		s.span.SetAttributes(keyErrorType.String(errOther))
		s.span.SetStatus(codes.Error, t.scrub(e.Error))
	}
	st.last[e.Session] = s.sc
	t.end(s.span, ev.At)
}

func chatKey(session, agent string) string { return session + "\x00" + agent }

// chat returns the open chat span for a provider event, starting one for a
// first attempt. A call's attempts share one span: its start is the first
// attempt's, its end the last's, and failed attempts are span events.
func (t *translator) chat(ctx context.Context, st *runState, ev events.Event, session, agent, provider, mdl string, attempt int, latency int64) *chatSpan {
	key := chatKey(session, agent)
	if c, ok := st.chats[key]; ok && attempt > 1 {
		c.attempts = attempt
		return c
	} else if ok {
		// A new call while one is open: the open one's last attempt was
		// not recorded (a crash); close it as incomplete.
		t.abandon(c.span, st.lastAt)
	}
	start := ev.At.Add(-time.Duration(latency) * time.Millisecond)
	// The conventions name the span "chat {model}", or "chat" when the
	// model is not known (a scripted cassette run without --model).
	name, attrs := opChat, []attribute.KeyValue{keyOperation.String(opChat), keyProvider.String(providerName(provider)),
		keyProviderLabel.String(provider), keyRunID.String(st.id), keySessionID.String(session), keyConversation.String(session), keySeq.Int64(ev.Seq)}
	if mdl != "" {
		name += " " + mdl
		attrs = append(attrs, keyRequestModel.String(mdl))
	}
	attrs = append(attrs, t.sampling(ctx, ev)...)
	sp, sc := t.startSpan(ctx, st, st.parentOf(agent), SpanIDAt(st.id, ev.Seq), name, start, trace.SpanKindClient, nil, attrs...)
	c := &chatSpan{openSpan: openSpan{span: sp, sc: sc, path: agent, session: session, start: start}, provider: provider, model: mdl, attempts: attempt}
	st.chats[key] = c
	return c
}

func (t *translator) providerCalled(ctx context.Context, st *runState, ev events.Event, e *events.ProviderCalled) {
	c := t.chat(ctx, st, ev, e.Session, e.Agent, e.Provider, e.Model, e.Attempt, e.LatencyMS)
	delete(st.chats, chatKey(e.Session, e.Agent))
	attrs := []attribute.KeyValue{keyInputTokens.Int64(e.Usage.PromptTokens), keyOutputTokens.Int64(e.Usage.CompletionTokens),
		keyAttempts.Int(e.Attempt), keyStreamed.Bool(e.Streamed), keyEndSeq.Int64(ev.Seq)}
	var resp model.Response
	haveResp := t.blob(ctx, e.ResponseRef, &resp)
	if haveResp {
		if resp.Model != "" {
			attrs = append(attrs, keyResponseModel.String(resp.Model))
		}
		if resp.FinishReason != "" {
			attrs = append(attrs, keyFinishReasons.StringSlice([]string{resp.FinishReason}))
		}
	}
	if t.content {
		if haveResp {
			attrs = append(attrs, keyOutputMessages.String(t.outputMessages(resp)))
		}
		if in, ok := t.inputMessages(ctx, st, e.RequestRef); ok {
			attrs = append(attrs, keyInputMessages.String(in))
		}
	}
	c.span.SetAttributes(attrs...)
	st.last[e.Session] = c.sc
	t.inst.chat(ctx, providerName(e.Provider), e.Model, resp.Model, "", e.Usage.PromptTokens, e.Usage.CompletionTokens, ev.At.Sub(c.start))
	t.end(c.span, ev.At)
}

func (t *translator) providerFailed(ctx context.Context, st *runState, ev events.Event, e *events.ProviderFailed) {
	c := t.chat(ctx, st, ev, e.Session, e.Agent, e.Provider, e.Model, e.Attempt, e.LatencyMS)
	msg := t.scrub(e.Error)
	c.span.AddEvent("rath.provider.attempt_failed", trace.WithTimestamp(ev.At), trace.WithAttributes(
		keyAttempt.Int(e.Attempt), keyErrorType.String(e.ErrorKind), keyErrorMessage.String(msg),
		keyWillRetry.Bool(e.WillRetry), keySeq.Int64(ev.Seq)))
	if e.WillRetry {
		return
	}
	delete(st.chats, chatKey(e.Session, e.Agent))
	c.span.SetAttributes(keyAttempts.Int(e.Attempt), keyErrorType.String(e.ErrorKind), keyEndSeq.Int64(ev.Seq))
	c.span.SetStatus(codes.Error, msg)
	t.inst.chat(ctx, providerName(e.Provider), e.Model, "", e.ErrorKind, 0, 0, ev.At.Sub(c.start))
	t.end(c.span, ev.At)
}

func toolKey(session, callID string) string { return session + "\x00" + callID }

func (t *translator) toolCalled(ctx context.Context, st *runState, ev events.Event, e *events.ToolCalled) {
	attrs := []attribute.KeyValue{keyOperation.String(opTool), keyToolName.String(e.Tool), keyToolCallID.String(e.CallID),
		keyToolType.String("function"), keyRunID.String(st.id), keySessionID.String(e.Session), keySeq.Int64(ev.Seq)}
	if e.Backend != "" {
		attrs = append(attrs, keyBackend.String(e.Backend))
	}
	if t.content {
		attrs = append(attrs, keyToolArguments.String(t.scrub(e.Arguments)))
	}
	sp, sc := t.startSpan(ctx, st, st.parentOf(e.Agent), SpanIDAt(st.id, ev.Seq), opTool+" "+e.Tool, ev.At, trace.SpanKindInternal, nil, attrs...)
	st.tools[toolKey(e.Session, e.CallID)] = &openSpan{span: sp, sc: sc, path: e.Agent, session: e.Session, start: ev.At}
}

func (t *translator) toolReturned(ctx context.Context, st *runState, ev events.Event, e *events.ToolReturned) {
	d := time.Duration(e.DurationMS) * time.Millisecond
	key := toolKey(e.Session, e.CallID)
	s, ok := st.tools[key]
	if !ok {
		// The call was recorded before the window (or under another
		// session handle): reconstruct its start from the duration.
		sp, sc := t.startSpan(ctx, st, st.parentOf(e.Agent), SpanIDAt(st.id, ev.Seq), opTool+" "+e.Tool, ev.At.Add(-d), trace.SpanKindInternal, nil,
			keyOperation.String(opTool), keyToolName.String(e.Tool), keyToolCallID.String(e.CallID), keyToolType.String("function"),
			keyRunID.String(st.id), keySessionID.String(e.Session), keySeq.Int64(ev.Seq))
		s = &openSpan{span: sp, sc: sc, start: ev.At.Add(-d)}
	}
	delete(st.tools, key)
	attrs := []attribute.KeyValue{keyOutputSize.Int(e.OutputSize), keyToolDuration.Int64(e.DurationMS), keyEndSeq.Int64(ev.Seq)}
	if e.Backend != "" {
		attrs = append(attrs, keyBackend.String(e.Backend))
	}
	if e.SandboxID != "" {
		attrs = append(attrs, keySandboxID.String(e.SandboxID))
	}
	if e.ExitCode != nil {
		attrs = append(attrs, keyExitCode.Int(*e.ExitCode))
	}
	if len(e.Files) > 0 {
		attrs = append(attrs, keyFilesChanged.Int(len(e.Files)))
	}
	errType := e.ErrorKind
	if errType == "" && e.IsError {
		errType = "tool_error"
	}
	if errType != "" {
		attrs = append(attrs, keyErrorType.String(errType))
		s.span.SetStatus(codes.Error, t.scrub(e.Error))
	}
	if t.content {
		var out []byte
		if t.blobs != nil && e.OutputRef != "" {
			out, _ = t.blobs.GetBlob(ctx, e.OutputRef)
		}
		if out != nil {
			attrs = append(attrs, keyToolResult.String(t.scrub(string(out))))
		}
	}
	s.span.SetAttributes(attrs...)
	// Tools of one round may run in parallel and are recorded together
	// after the last one returns: the recorded duration ends each span,
	// never later than the record.
	end := s.start.Add(d)
	if end.After(ev.At) || e.DurationMS <= 0 {
		end = ev.At
	}
	t.inst.tool(ctx, e.Tool, e.Backend, errType)
	t.end(s.span, end)
}

func (t *translator) finished(ctx context.Context, st *runState, ev events.Event, e *events.RunFinished) {
	t.closeOpen(st, ev.At)
	for _, l := range st.takeLinks(e.OutputSession) {
		st.root.AddLink(l)
	}
	st.root.SetAttributes(keyRunStatus.String(e.Status), keyEndSeq.Int64(ev.Seq))
	if e.OutputSession != "" {
		st.root.SetAttributes(keyOutputSession.String(e.OutputSession))
	}
	if e.Status != "ok" {
		st.root.SetAttributes(keyErrorType.String(errOther))
		st.root.SetStatus(codes.Error, t.scrub(e.Error))
	}
	t.inst.run(ctx, st.workflow, e.Status)
	t.end(st.root, ev.At)
	delete(t.runs, st.id)
}

// closeOpen ends a run's open spans, innermost first, marked incomplete:
// their end was never recorded.
func (t *translator) closeOpen(st *runState, at time.Time) {
	for k, c := range st.tools {
		t.abandon(c.span, at)
		delete(st.tools, k)
	}
	for k, c := range st.chats {
		t.abandon(c.span, at)
		delete(st.chats, k)
	}
	var open []*openSpan
	for _, stack := range st.agents {
		open = append(open, stack...)
	}
	// Deeper paths first, so children end before their parents.
	for len(open) > 0 {
		deepest := 0
		for i, s := range open {
			if strings.Count(s.path, ".") > strings.Count(open[deepest].path, ".") {
				deepest = i
			}
		}
		t.abandon(open[deepest].span, at)
		open = append(open[:deepest], open[deepest+1:]...)
	}
	st.agents = map[string][]*openSpan{}
}

func (t *translator) abandon(sp trace.Span, at time.Time) {
	sp.SetAttributes(keyIncomplete.Bool(true))
	t.end(sp, at)
}

// flush ends every run still open at its last event's time, marked
// incomplete: for a run that crashed, or one still running when a live
// exporter stops.
func (t *translator) flush() {
	for id, st := range t.runs {
		t.closeOpen(st, st.lastAt)
		t.abandon(st.root, st.lastAt)
		delete(t.runs, id)
	}
}

// blob decodes the JSON blob at ref into v; a missing blob (a store that
// discards them) or no store leaves v as is.
func (t *translator) blob(ctx context.Context, ref string, v any) bool {
	if t.blobs == nil || ref == "" {
		return false
	}
	raw, err := t.blobs.GetBlob(ctx, ref)
	if err != nil {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// sampling returns the request's sampling parameters, read from the
// recorded request's envelope (not its messages).
func (t *translator) sampling(ctx context.Context, ev events.Event) []attribute.KeyValue {
	var ref struct {
		RequestRef string `json:"request_ref"`
	}
	if json.Unmarshal(ev.Payload, &ref) != nil {
		return nil
	}
	var env struct {
		Sampling model.Sampling `json:"sampling"`
	}
	if !t.blob(ctx, ref.RequestRef, &env) {
		return nil
	}
	sm := env.Sampling
	var out []attribute.KeyValue
	if sm.Temperature != nil {
		out = append(out, keyTemperature.Float64(*sm.Temperature))
	}
	if sm.TopP != nil {
		out = append(out, keyTopP.Float64(*sm.TopP))
	}
	if sm.MaxTokens > 0 {
		out = append(out, keyMaxTokens.Int(sm.MaxTokens))
	}
	if sm.Seed != nil {
		out = append(out, keySeed.Int(*sm.Seed))
	}
	if len(sm.Stop) > 0 {
		out = append(out, keyStopSequences.StringSlice(sm.Stop))
	}
	return out
}

// providerName maps rath's provider label to the conventions' value when
// it is one of the kinds rath knows; a configured name is kept as is.
func providerName(label string) string {
	switch strings.ToLower(label) {
	case flow.VendorOpenAI:
		return "openai"
	case flow.VendorAnthropic:
		return "anthropic"
	}
	return label
}
