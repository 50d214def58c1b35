package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	proto "github.com/gorath/rath/internal/oracle"
)

// attempt is one recorded model call attempt.
type attempt struct {
	seq    int64
	at     key // the recorded event's stream and version
	called *events.ProviderCalled
	failed *events.ProviderFailed
}

func (a attempt) digest() string {
	if a.called != nil {
		return a.called.Digest
	}
	return a.failed.Digest
}

func (a attempt) requestRef() string {
	if a.called != nil {
		return a.called.RequestRef
	}
	return a.failed.RequestRef
}

func (a attempt) number() int {
	if a.called != nil {
		return a.called.Attempt
	}
	return a.failed.Attempt
}

type toolRecord struct {
	seq int64
	at  key
	ret *events.ToolReturned
}

type recallRecord struct {
	seq int64
	at  key
	rec *events.MemoryRecalled
}

// oracle answers from a recorded run: model attempts and tool results, per
// agent path in recorded order (parallel branches have their own paths, so
// their interleaving does not matter).
type oracle struct {
	store     *eventlog.Store // the original store, for blobs
	strict    bool            // an exhausted record is a divergence (else: go live)
	liveTools bool            // run recorded tool calls for real (after checking them)
	// liveOnChange makes a lenient oracle answer a changed request by
	// going live, and every call after it (a counterfactual with --live),
	// instead of reporting a divergence.
	liveOnChange bool
	// retryAt is the seq of a failed model attempt a resume retries: the
	// run was left open on it for a retry of the whole run.
	retryAt int64

	mu sync.Mutex // protects the fields below
	// indexing is set while the record is read and indexed in the
	// background (startOracle); answers wait on indexed for what they need.
	indexing bool
	indexed  *sync.Cond     // on mu; broadcast as each batch is indexed
	indexErr error          // why indexing stopped early
	recorded []events.Event // the record startOracle read, once it is done

	blobs map[string][]byte // prefetched response and tool blobs

	recalls map[string][]recallRecord           // by agent
	effects map[string][]*events.EffectRecorded // by path + "\x00" + kind
	commits map[string][]commitRecord           // by namespace + "\x00" + session
	// questions asked by tool calls (flow.Ask), by session + "\x00" + call id
	questions map[string][]events.ApprovalRequested

	models   map[string][]attempt
	tools    map[string][]toolRecord
	diverged *Divergence
	cancel   context.CancelFunc
	// beforeLive, if set, runs before the oracle lets a call go live (a
	// resume forwards its events to the real store then).
	beforeLive func(context.Context) error
	answered   int
	// lastSeq is the seq of the last event indexed; finished reports
	// whether the record holds the run's run.finished. A strict replay of
	// an unfinished record stops where the record does (see pastEnd).
	lastSeq  int64
	finished bool
}

// errRecordEnd stops a replayed run where its unfinished record stops: the
// run crashed, was fenced, is still running or waits for a person there.
var errRecordEnd = errors.New("replay: the record of this unfinished run ends here")

// pastEnd answers a call the record does not have: past the end of an
// unfinished record it is where the run stopped (not a divergence), else
// it is divergence d. Call it with o.mu held.
func (o *oracle) pastEnd(d *Divergence) error {
	if err := o.await(func() bool { return false }); err != nil {
		return err
	}
	if !o.finished {
		return errRecordEnd
	}
	return o.diverge(d)
}

// goLive runs beforeLive, if set.
func (o *oracle) goLive(ctx context.Context) error {
	if o.beforeLive == nil {
		return nil
	}
	return o.beforeLive(ctx)
}

// blob returns a prefetched blob, falling back to the store.
func (o *oracle) blob(ctx context.Context, ref string) ([]byte, error) {
	if b, ok := o.blobs[ref]; ok {
		return b, nil
	}
	return o.store.GetBlob(ctx, ref)
}

// diverge records the first divergence and stops the replayed run.
func (o *oracle) diverge(d *Divergence) error {
	if o.diverged == nil {
		o.diverged = d
		if o.cancel != nil {
			o.cancel()
		}
	}
	return d
}

func (o *oracle) Model(ctx context.Context, call proto.ModelCall) (proto.ModelAnswer, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	// Two attempts: a failed one is answered with whether the next retries it.
	if err := o.await(func() bool { return len(o.models[call.Agent]) > 1 }); err != nil {
		return proto.ModelAnswer{}, err
	}
	q := o.models[call.Agent]
	if len(q) == 0 {
		if !o.strict {
			return proto.ModelAnswer{Live: true}, o.goLive(ctx)
		}
		return proto.ModelAnswer{}, o.pastEnd(&Divergence{Class: ClassExtra, Type: events.TypeProviderCalled, Stream: call.Session,
			Change: ChangeStructural, Unanswered: true, Hint: fmt.Sprintf("extra model call: agent %s made a call (attempt %d) the record does not have; the code path changed%s", call.Agent, call.Attempt, o.renameHint(call.Agent))})
	}
	a := q[0]
	o.models[call.Agent] = q[1:]
	if a.digest() != call.Digest && o.liveOnChange {
		o.forgetRecord()
		return proto.ModelAnswer{Live: true}, o.goLive(ctx)
	}
	if a.digest() != call.Digest {
		d := &Divergence{Class: ClassMismatch, Seq: a.seq, Type: events.TypeProviderCalled, Stream: a.at.stream, Version: a.at.version, Unanswered: true,
			Hint: fmt.Sprintf("prompt changed: agent %s sent a different request than the record (digest %.12s, recorded %.12s)", call.Agent, call.Digest, a.digest())}
		if a.failed != nil {
			d.Type = events.TypeProviderFailed
		}
		d.Diff, d.Change = o.requestDiff(ctx, a, call.Request)
		return proto.ModelAnswer{}, o.diverge(d)
	}
	if a.number() != call.Attempt {
		return proto.ModelAnswer{}, o.diverge(&Divergence{Class: ClassMismatch, Seq: a.seq, Type: events.TypeProviderCalled, Stream: a.at.stream, Version: a.at.version,
			Hint: fmt.Sprintf("retry sequence changed: agent %s is at attempt %d, the record at %d", call.Agent, call.Attempt, a.number())})
	}
	o.answered++
	if a.failed != nil {
		// The record retried this call after it (a run retried as a
		// whole), or this resume is that retry.
		next := o.models[call.Agent]
		retry := a.seq == o.retryAt || len(next) > 0 && next[0].digest() == a.digest() && next[0].number() == a.number()+1
		return proto.ModelAnswer{Err: proto.RecordedFailure(a.failed), Latency: time.Duration(a.failed.LatencyMS) * time.Millisecond, Retry: retry}, nil
	}
	raw, err := o.blob(ctx, a.called.ResponseRef)
	if err != nil {
		return proto.ModelAnswer{}, fmt.Errorf("replay: response of seq %d: %w", a.seq, err)
	}
	var resp model.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return proto.ModelAnswer{}, fmt.Errorf("replay: response of seq %d: %w", a.seq, err)
	}
	return proto.ModelAnswer{Response: resp, Latency: time.Duration(a.called.LatencyMS) * time.Millisecond}, nil
}

func (o *oracle) Tool(ctx context.Context, call proto.ToolCall) (proto.ToolAnswer, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.await(func() bool {
		return slices.ContainsFunc(o.tools[call.Agent], func(t toolRecord) bool { return t.ret.CallID == call.CallID })
	}); err != nil {
		return proto.ToolAnswer{}, err
	}
	q := o.tools[call.Agent]
	if len(q) == 0 {
		if !o.strict {
			return proto.ToolAnswer{Live: true}, o.goLive(ctx)
		}
		return proto.ToolAnswer{}, o.pastEnd(&Divergence{Class: ClassExtra, Type: events.TypeToolReturned, Stream: call.Session,
			Change: ChangeStructural, Unanswered: true, Hint: fmt.Sprintf("tool sequence changed: agent %s called %s (%s), which the record does not have", call.Agent, call.Tool, call.CallID)})
	}
	// Parallel-safe calls of one round reach the oracle in any order:
	// match by call id within the agent's record, in order otherwise.
	i := 0
	for i < len(q) && q[i].ret.CallID != call.CallID {
		i++
	}
	if (i == len(q) || q[i].ret.Tool != call.Tool) && o.liveOnChange {
		o.forgetRecord()
		return proto.ToolAnswer{Live: true}, o.goLive(ctx)
	}
	if i == len(q) || q[i].ret.Tool != call.Tool {
		t := q[0]
		return proto.ToolAnswer{}, o.diverge(&Divergence{Class: ClassMismatch, Seq: t.seq, Type: events.TypeToolReturned, Stream: t.at.stream, Version: t.at.version,
			Change: ChangeStructural, Unanswered: true, Hint: fmt.Sprintf("tool sequence changed: agent %s called %s (%s), the record has %s (%s) next", call.Agent, call.Tool, call.CallID, t.ret.Tool, t.ret.CallID)})
	}
	t := q[i]
	if i == 0 {
		o.tools[call.Agent] = q[1:] // the usual case: no copy of the rest
	} else {
		o.tools[call.Agent] = append(q[:i:i], q[i+1:]...)
	}
	if o.liveTools {
		o.answered++
		return proto.ToolAnswer{Live: true, Seq: t.seq}, nil
	}
	out, err := o.blob(ctx, t.ret.OutputRef)
	if err != nil {
		return proto.ToolAnswer{}, fmt.Errorf("replay: tool output of seq %d: %w", t.seq, err)
	}
	res := proto.ToolResult{Content: string(out), IsError: t.ret.IsError, ExitCode: t.ret.ExitCode, Files: t.ret.Files,
		Backend: t.ret.Backend, SandboxID: t.ret.SandboxID, Attachments: t.ret.Attachments, Truncated: t.ret.Truncated}
	for _, at := range t.ret.Attachments {
		if at.Ref == "" {
			continue
		}
		b, err := o.blob(ctx, at.Ref)
		if err != nil {
			return proto.ToolAnswer{}, fmt.Errorf("replay: attachment of seq %d: %w", t.seq, err)
		}
		res.Blobs = append(res.Blobs, b)
	}
	for _, f := range t.ret.Files {
		for _, h := range []string{f.Before, f.After} {
			if h == "" {
				continue
			}
			b, err := o.blob(ctx, h)
			if err != nil {
				return proto.ToolAnswer{}, fmt.Errorf("replay: file content of seq %d: %w", t.seq, err)
			}
			res.Blobs = append(res.Blobs, b)
		}
	}
	o.answered++
	// For a failed call the loop rebuilds the content from kind and text.
	return proto.ToolAnswer{Result: res, ErrorKind: t.ret.ErrorKind, Error: t.ret.Error, Duration: time.Duration(t.ret.DurationMS) * time.Millisecond, Seq: t.seq,
		Questions: o.questions[call.Session+"\x00"+call.CallID]}, nil
}

func (o *oracle) Recall(ctx context.Context, call proto.RecallCall) (proto.RecallAnswer, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.await(func() bool { return len(o.recalls[call.Agent]) > 0 }); err != nil {
		return proto.RecallAnswer{}, err
	}
	q := o.recalls[call.Agent]
	if len(q) == 0 {
		if !o.strict {
			return proto.RecallAnswer{Live: true}, o.goLive(ctx)
		}
		return proto.RecallAnswer{}, o.pastEnd(&Divergence{Class: ClassExtra, Type: events.TypeMemoryRecalled, Stream: call.Session,
			Change: ChangeStructural, Unanswered: true, Hint: fmt.Sprintf("extra memory recall by agent %s; the code path changed", call.Agent)})
	}
	r := q[0]
	o.recalls[call.Agent] = q[1:]
	if r.rec.Query != call.Query || r.rec.Namespace != call.Namespace {
		return proto.RecallAnswer{}, o.diverge(&Divergence{Class: ClassMismatch, Seq: r.seq, Type: events.TypeMemoryRecalled, Stream: r.at.stream, Version: r.at.version,
			Change: ChangeWording, Unanswered: true, Hint: fmt.Sprintf("memory recall changed: agent %s asked %q in %s, the record asked %q in %s", call.Agent, call.Query, call.Namespace, r.rec.Query, r.rec.Namespace)})
	}
	o.answered++
	return proto.RecallAnswer{Hits: r.rec.Hits, Error: r.rec.Error}, nil
}

func (o *oracle) Commit(ctx context.Context, call proto.CommitCall) (proto.CommitAnswer, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := call.Namespace + "\x00" + call.Session
	if err := o.await(func() bool { return len(o.commits[k]) > 0 }); err != nil {
		return proto.CommitAnswer{}, err
	}
	q := o.commits[k]
	if len(q) == 0 {
		if !o.strict {
			return proto.CommitAnswer{Live: true}, o.goLive(ctx)
		}
		return proto.CommitAnswer{}, o.pastEnd(&Divergence{Class: ClassExtra, Type: events.TypeMemoryCommitted, Stream: events.MemoryStream(call.Namespace),
			Hint: fmt.Sprintf("extra commit to memory %s by agent %s; the code path changed", call.Namespace, call.Agent)})
	}
	o.commits[k] = q[1:]
	o.answered++
	return proto.CommitAnswer{First: q[0].first, Recorded: q[0].rec}, nil
}

func (o *oracle) Effect(ctx context.Context, call proto.EffectCall) (proto.EffectAnswer, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := call.Path + "\x00" + call.Kind
	if err := o.await(func() bool { return len(o.effects[k]) > 0 }); err != nil {
		return proto.EffectAnswer{}, err
	}
	q := o.effects[k]
	if len(q) == 0 {
		if !o.strict {
			return proto.EffectAnswer{Live: true}, o.goLive(ctx)
		}
		return proto.EffectAnswer{}, o.pastEnd(&Divergence{Class: ClassExtra, Type: events.TypeEffectRecorded, Stream: call.Path,
			Hint: fmt.Sprintf("extra flow.%s at %s; the code path changed", call.Kind, call.Path)})
	}
	o.effects[k] = q[1:]
	o.answered++
	return proto.EffectAnswer{Value: q[0].Value}, nil
}

// forgetRecord drops the record's remaining model and tool answers: once
// a request changed, what the record holds after it answers another
// conversation. Call it with o.mu held.
func (o *oracle) forgetRecord() {
	clear(o.models)
	clear(o.tools)
}

// unconsumed returns the first recorded attempt or tool result the replay
// never asked for.
func (o *oracle) unconsumed() *Divergence {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.await(func() bool { return false }) != nil {
		return nil // Run reports the indexing error (record)
	}
	type left struct {
		seq  int64
		at   key
		typ  string
		hint string
	}
	var all []left
	for agent, q := range o.models {
		for _, a := range q {
			all = append(all, left{a.seq, a.at, events.TypeProviderCalled, fmt.Sprintf("missing model call: agent %s made %d more call(s) in the record; the code path changed", agent, len(q))})
			break
		}
	}
	for agent, q := range o.tools {
		for _, t := range q {
			all = append(all, left{t.seq, t.at, events.TypeToolReturned, fmt.Sprintf("missing tool call: agent %s called %s in the record, the replay did not", agent, t.ret.Tool)})
			break
		}
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	return &Divergence{Class: ClassMissing, Seq: all[0].seq, Type: all[0].typ, Stream: all[0].at.stream, Version: all[0].at.version, Hint: all[0].hint, Change: ChangeStructural}
}

// requestDiff shows how a request differs from the recorded one, and
// what kind of change it is (requestChange); the kind is "" when the
// recorded request cannot be read.
func (o *oracle) requestDiff(ctx context.Context, a attempt, got model.Request) (diff, change string) {
	ref := a.requestRef()
	want, err := flow.LoadRequest(ctx, o.store, ref)
	if err != nil {
		return fmt.Sprintf("(recorded request %s not available: %v)", ref, err), ""
	}
	return describeRequestDiff(want, got), requestChange(want, got)
}

func describeRequestDiff(want, got model.Request) string {
	var b strings.Builder
	n := max(len(want.Messages), len(got.Messages))
	for i := range n {
		var w, g string
		if i < len(want.Messages) {
			w = want.Messages[i].Role + ": " + want.Messages[i].Content
		}
		if i < len(got.Messages) {
			g = got.Messages[i].Role + ": " + got.Messages[i].Content
		}
		if w != g {
			fmt.Fprintf(&b, "message %d:\n- %s\n+ %s\n", i, clip(w), clip(g))
		}
	}
	wantTools, _ := json.Marshal(want.Tools)
	gotTools, _ := json.Marshal(got.Tools)
	if string(wantTools) != string(gotTools) && (len(want.Tools) > 0 || len(got.Tools) > 0) {
		fmt.Fprintf(&b, "tools:\n- %s\n+ %s\n", clip(string(wantTools)), clip(string(gotTools)))
	}
	if want.Model != got.Model {
		fmt.Fprintf(&b, "model:\n- %s\n+ %s\n", want.Model, got.Model)
	}
	if b.Len() == 0 {
		return "(the requests differ in sampling or tool choice)"
	}
	return strings.TrimRight(b.String(), "\n")
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// renameHint suggests a rename as the cause when agent has no recorded
// calls left but an agent the replay has not reached does, with the same
// path up to its last segment: a field or type that holds the workflow was
// probably renamed, which changes the recorded module path.
func (o *oracle) renameHint(agent string) string {
	parent, _, _ := cutLast(agent)
	var cands []string
	for other, q := range o.models {
		if other == agent || len(q) == 0 {
			continue
		}
		if p, _, _ := cutLast(other); p == parent {
			cands = append(cands, other)
		}
	}
	if len(cands) != 1 {
		return ""
	}
	return fmt.Sprintf(" (the record has unreplayed calls by %s at that place: if a field or type was renamed, pin the recorded name with the struct tag `rath:%q` or flow.Named)", cands[0], lastSegment(cands[0]))
}

func cutLast(path string) (parent, last string, ok bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", path, false
	}
	return path[:i], path[i+1:], true
}

func lastSegment(path string) string {
	_, last, _ := cutLast(path)
	return last
}

// Approval answers a request from the recorded decision, read from the
// original store: a replay never asks anybody. A resumed run past a
// request's deadline records its default decision first, as the live run
// would have.
func (o *oracle) Approval(ctx context.Context, call proto.ApprovalCall) (proto.ApprovalAnswer, error) {
	st, err := approval.Load(ctx, o.store, call.ID)
	if errors.Is(err, approval.ErrUnknown) {
		return proto.ApprovalAnswer{}, nil // asked past the record: nobody has seen it yet
	}
	if err != nil {
		return proto.ApprovalAnswer{}, err
	}
	if o.strict {
		// A decision made after the record's last event was not part of
		// the run yet (decided, not resumed): the replay still waits.
		return proto.ApprovalAnswer{Decision: o.decidedInRecord(ctx, call.ID, st.Decision)}, nil
	}
	if st.Decision != nil {
		return proto.ApprovalAnswer{Decision: st.Decision}, nil
	}
	dec, err := approval.Expire(ctx, o.store, call.ID, time.Now())
	return proto.ApprovalAnswer{Decision: dec}, err
}

// decidedInRecord returns dec, the decision on request id, if the run's
// record goes on after it (the run read it), else nil.
func (o *oracle) decidedInRecord(ctx context.Context, id string, dec *events.ApprovalDecided) *events.ApprovalDecided {
	if dec == nil {
		return nil
	}
	o.mu.Lock()
	err := o.await(func() bool { return false })
	last := o.lastSeq
	o.mu.Unlock()
	if err != nil {
		return dec // the record could not be read: Run reports that
	}
	evs, err := o.store.ReadStream(ctx, events.ApprovalStream(id), 2)
	if err != nil || len(evs) == 0 || evs[0].Type != events.TypeApprovalDecided {
		return dec
	}
	if evs[0].Seq > last {
		return nil
	}
	return dec
}
