package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// Resume continues a run that started and never finished (the process
// crashed). wf's code runs again: every model call and tool call the
// record holds is answered from it, not repeated; once an agent's record
// runs out it goes on live, and each event past the record is written to
// rt's store as it is produced. A tool call recorded as called but never
// returned (the crash came in the middle of it) runs again.
//
// With WithLease, every event written to rt's store is fenced by the
// lease: once another worker takes the run, the resume stops with an
// *eventlog.FencedError.
func Resume(ctx context.Context, rt *rath.Runtime, runID string, wf flow.Workflow, opts ...ResumeOption) (*rath.Run, error) {
	var cfg resumeConfig
	for _, o := range opts {
		o(&cfg)
	}
	if l := cfg.lease; l != nil && l.Run != runID {
		return nil, fmt.Errorf("replay: resume run %s under the lease of run %s", runID, l.Run)
	}
	info, err := loadRun(ctx, rt, runID)
	if err != nil {
		return nil, err
	}
	if info.finished != nil {
		return nil, fmt.Errorf("%w: %s finished with status %s", ErrNotResumable, runID, info.finished.Status)
	}
	if err := recordResume(ctx, rt, runID, info); err != nil {
		return nil, err
	}
	// What the resume adds is the same subject's as what the run wrote.
	fw := newForwarder(rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: runID}, Lease: cfg.lease}), info.started.Subject, info.events)
	sc, err := newScratchWith(ctx, false, fw)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	if err := copyLineage(ctx, rt, sc.rt, info.started.InputSession, info.startSeq, info.memoryStreams...); err != nil {
		return nil, err
	}
	orc, err := newOracle(ctx, rt.Store(), info.events, 0, false)
	if err != nil {
		return nil, err
	}
	if orc.retryAt, err = retryPoint(info.events); err != nil {
		return nil, err
	}
	if err := fw.start(ctx, sc.rt.Store()); err != nil {
		return nil, err
	}
	// A live call waits until every event before it is in the real store:
	// a crash during the call must find them there.
	orc.beforeLive = fw.flush
	out, err := execute(ctx, sc.rt, info, wf, orc)
	if ferr := fw.stop(); err == nil || errors.Is(err, flow.ErrWaiting) && ferr != nil {
		err = ferr
	}
	// Waiting again for a person is not a failure: the run is returned
	// with the *flow.WaitingError, still open.
	waiting := errors.Is(err, flow.ErrWaiting)
	if err != nil && !waiting {
		return nil, err
	}
	if d := fw.failure(); d != nil {
		return nil, d
	}
	if orc.diverged != nil {
		return nil, orc.diverged
	}
	run := &rath.Run{ID: runID, Seed: info.started.Seed}
	if out != nil && !waiting {
		if run.Output, err = rt.Session(ctx, out.ID()); err != nil {
			return run, err
		}
	}
	return run, err
}

// ResumeOption configures Resume.
type ResumeOption func(*resumeConfig)

type resumeConfig struct {
	lease *eventlog.Lease
}

// WithLease fences what the resume writes with a worker's lease on the
// run (its run id must be the run's).
func WithLease(l eventlog.Lease) ResumeOption { return func(c *resumeConfig) { c.lease = &l } }

// forwarder carries a resumed run's new events from the scratch store to
// the real one. As a projector on the scratch store it checks each event
// the record has against it (a mismatch refuses the write); the others are
// forwarded only once the scratch store committed them, read back in seq
// order: a projector also runs for a write that is later rolled back, or
// twice for a batch the writer redoes, and neither may reach the real
// store. A goroutine forwards after each scratch commit, and flush does so
// at once (the oracle calls it before each live call).
type forwarder struct {
	// dst appends to the real store in the run, under its lease if the
	// resume holds one.
	dst      eventlog.Appender
	subject  string // whose content the run is ("" for its own)
	runID    string
	recorded map[key]recordedEvent

	mu       sync.Mutex // protects diverged
	diverged *Divergence

	flushMu sync.Mutex // protects the fields below; held for a whole flush
	src     *eventlog.Store
	ctx     context.Context
	next    int64 // first scratch seq not yet forwarded
	err     error // the first failed forward; later flushes return it
	quit    chan struct{}
	done    chan struct{}
}

type recordedEvent struct {
	seq     int64
	typ     string
	payload string // normalized
}

func newForwarder(dst eventlog.Appender, subject string, recorded []events.Event) *forwarder {
	f := &forwarder{dst: dst, runID: dst.Scope().Run.ID, subject: subject, recorded: make(map[key]recordedEvent, len(recorded))}
	for _, ev := range recorded {
		f.recorded[key{ev.Stream, ev.Version}] = recordedEvent{seq: ev.Seq, typ: ev.Type, payload: normalize(ev.Payload)}
	}
	return f
}

// start forwards the run's events src commits from now on.
func (f *forwarder) start(ctx context.Context, src *eventlog.Store) error {
	head, err := src.Head(ctx)
	if err != nil {
		return fmt.Errorf("replay: resume: %w", err)
	}
	f.flushMu.Lock()
	f.src, f.next = src, head.Seq+1
	f.ctx = context.WithoutCancel(ctx)
	if f.subject != "" {
		f.ctx = events.ContextWithSubject(f.ctx, f.subject)
	}
	f.quit, f.done = make(chan struct{}), make(chan struct{})
	f.flushMu.Unlock()
	go func() {
		defer close(f.done)
		for {
			wake := src.Notify()
			f.flush(f.ctx)
			select {
			case <-f.quit:
				return
			case <-wake:
			}
		}
	}()
	return nil
}

// stop ends the forwarding goroutine and forwards what is left.
func (f *forwarder) stop() error {
	close(f.quit)
	<-f.done
	return f.flush(f.ctx)
}

func (f *forwarder) failure() *Divergence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.diverged
}

// Project checks an event of the run against the record; it forwards
// nothing (see forwarder).
func (f *forwarder) Project(_ context.Context, _ *eventlog.Tx, ev *events.Event, _ events.Payload) error {
	if ev.RunID != f.runID {
		return nil
	}
	want, ok := f.recorded[key{ev.Stream, ev.Version}]
	if !ok {
		return nil
	}
	if got := normalize(ev.Payload); ev.Type != want.typ || got != want.payload {
		d := &Divergence{Class: ClassMismatch, Seq: want.seq, Type: want.typ, Stream: ev.Stream, Version: ev.Version, Want: want.payload, Got: got,
			Diff: fieldDiff(want.typ, want.payload, ev.Type, got), Hint: "the resumed code does not reproduce the recorded prefix: " + hintFor(ClassMismatch, want.typ, ev.Type)}
		f.mu.Lock()
		if f.diverged == nil {
			f.diverged = d
		}
		f.mu.Unlock()
		return d
	}
	return nil
}

// flush forwards the run's committed scratch events the record does not
// have, in seq order, with the blobs they reference.
func (f *forwarder) flush(ctx context.Context) error {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	if f.err != nil || f.src == nil {
		return f.err
	}
	evs, err := f.src.Read(ctx, eventlog.Query{RunID: f.runID, FromSeq: f.next})
	if err != nil {
		return fmt.Errorf("replay: resume: read the scratch store: %w", err)
	}
	for len(evs) > 0 {
		// One write per run of events on one stream.
		n := 1
		for n < len(evs) && evs[n].Stream == evs[0].Stream && evs[n].Version == evs[n-1].Version+1 && f.isRecorded(evs[n]) == f.isRecorded(evs[0]) {
			n++
		}
		if err := f.forward(evs[:n]); err != nil {
			f.err = err
			return err
		}
		f.next = evs[n-1].Seq + 1
		evs = evs[n:]
	}
	return nil
}

func (f *forwarder) isRecorded(ev events.Event) bool {
	_, ok := f.recorded[key{ev.Stream, ev.Version}]
	return ok
}

func (f *forwarder) forward(evs []events.Event) error {
	w := eventlog.Write{Stream: evs[0].Stream}
	var refs []string
	for _, ev := range evs {
		if _, ok := f.recorded[key{ev.Stream, ev.Version}]; ok {
			continue // checked by Project, already in the store
		}
		p, err := ev.Decode()
		if err != nil {
			return fmt.Errorf("replay: forward %s v%d: %w", ev.Stream, ev.Version, err)
		}
		if len(w.Events) == 0 {
			w.Expected = ev.Version - 1
		}
		w.Events = append(w.Events, p)
		if br, ok := p.(events.BlobReferrer); ok {
			refs = append(refs, br.BlobRefs()...)
		}
	}
	if len(w.Events) == 0 {
		return nil
	}
	if len(refs) > 0 {
		blobs, err := f.src.GetBlobs(f.ctx, refs)
		if err != nil {
			return fmt.Errorf("replay: forward blobs of %s: %w", w.Stream, err)
		}
		for _, ref := range refs {
			b, ok := blobs[ref]
			if !ok {
				return fmt.Errorf("replay: forward %s: blob %s is not in the scratch store", w.Stream, ref)
			}
			w.Blobs = append(w.Blobs, b)
		}
	}
	// The prompt texts a request reaches through messages_ref are blobs no
	// event names directly: forward them too, or the store cannot verify.
	for _, p := range w.Events {
		segs, err := f.messageSegments(f.ctx, p)
		if err != nil {
			return err
		}
		w.Blobs = append(w.Blobs, segs...)
	}
	if _, err := f.dst.AppendWrites(f.ctx, w); err != nil {
		return fmt.Errorf("replay: forward %s v%d to the store: %w", w.Stream, w.Expected+1, err)
	}
	return nil
}

// messageSegments returns the message segments a model request reaches
// through its messages_ref chain (flow/request.go) that the store does not
// hold yet: the request blob names only the last segment, and verify
// checks them all. Earlier calls of the loop forwarded the older ones.
func (f *forwarder) messageSegments(ctx context.Context, p events.Payload) ([][]byte, error) {
	var req string
	switch e := p.(type) {
	case *events.ProviderCalled:
		req = e.RequestRef
	case *events.ProviderFailed:
		req = e.RequestRef
	}
	if req == "" {
		return nil, nil
	}
	raw, err := f.src.GetBlob(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("replay: forward request %s: %w", req, err)
	}
	var rec struct {
		MessagesRef string `json:"messages_ref"`
	}
	if json.Unmarshal(raw, &rec) != nil {
		return nil, nil
	}
	var out [][]byte
	for next := rec.MessagesRef; next != ""; {
		has, err := f.dst.Store().HasBlob(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("replay: forward message segment %s: %w", next, err)
		}
		if has {
			break // forwarded with an earlier call, and so is what precedes it
		}
		b, err := f.src.GetBlob(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("replay: forward message segment %s: %w", next, err)
		}
		out = append(out, b)
		var seg struct {
			Prev string `json:"prev"`
		}
		if json.Unmarshal(b, &seg) != nil {
			break
		}
		next = seg.Prev
	}
	return out, nil
}

// recordResume appends run.resumed, naming the tool calls that were in
// flight when the run stopped: they run again (at-least-once), and the log
// must say so. It is written outside the run (no run id), on a stream of
// its own, so a replay of the run does not expect it.
func recordResume(ctx context.Context, rt *rath.Runtime, runID string, info *runInfo) error {
	returned := map[string]bool{}
	var called []events.InterruptedCall
	var last int64
	for _, ev := range info.events {
		last = ev.Seq
		switch ev.Type {
		case events.TypeToolCalled, events.TypeToolReturned:
		default:
			continue
		}
		p, err := ev.Decode()
		if err != nil {
			return err
		}
		switch e := p.(type) {
		case *events.ToolCalled:
			called = append(called, events.InterruptedCall{Session: e.Session, CallID: e.CallID, Tool: e.Tool})
		case *events.ToolReturned:
			returned[e.Session+"\x00"+e.CallID] = true
		}
	}
	rec := events.RunResumed{Run: runID, AfterSeq: last}
	for _, c := range called {
		if !returned[c.Session+"\x00"+c.CallID] {
			rec.Interrupted = append(rec.Interrupted, c)
		}
	}
	// Appended in no run: not stamped with the run's id.
	if _, err := rt.Store().Append(context.WithoutCancel(ctx), events.ResumeStream(runID), eventlog.AnyVersion, rec); err != nil {
		return fmt.Errorf("replay: record the resume of %s: %w", runID, err)
	}
	return nil
}

// retryPoint returns the seq of the model attempt a run was left open on
// for a retry (flow.ContextWithSuspend): its last event, a failure of a kind worth
// retrying that the provider's own retries gave up on. 0 if the run
// stopped elsewhere (a crash): then its recorded failures stand.
func retryPoint(evs []events.Event) (int64, error) {
	i := len(evs) - 1
	if i < 0 || evs[i].Type != events.TypeProviderFailed {
		return 0, nil
	}
	p, err := evs[i].Decode()
	if err != nil {
		return 0, err
	}
	f := p.(*events.ProviderFailed)
	if f.WillRetry || !model.ErrorKind(f.ErrorKind).Retryable() {
		return 0, nil
	}
	return evs[i].Seq, nil
}
