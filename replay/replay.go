package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	proto "github.com/gorath/rath/internal/oracle"
	"github.com/gorath/rath/session"
)

// Report is the outcome of a replay.
type Report struct {
	Run      string `json:"run"`
	Workflow string `json:"workflow"`
	// Recorded is the number of events the run recorded; Compared the
	// number compared (the same), Matched those reproduced exactly.
	Recorded   int         `json:"recorded"`
	Produced   int         `json:"produced"`
	Matched    int         `json:"matched"`
	Answered   int         `json:"answered"` // model and tool calls answered from the record
	Divergence *Divergence `json:"divergence,omitempty"`
	// Incomplete is set when the recorded run never finished (it crashed).
	Incomplete bool `json:"incomplete,omitempty"`
	// Finished reports whether the record holds the run's end. A run
	// that has not finished (running, waiting for a person, decided but
	// not resumed, crashed, fenced) replays to the end of its record.
	Finished bool `json:"finished"`
	// Waiting holds the approval requests the replayed run waits for at
	// the end of its record, when it stopped for a person there.
	Waiting []string `json:"waiting,omitempty"`
	// Notes say what a reader of the verdict should know beside it, such
	// as a provider today's environment would resolve differently from
	// the recorded one. They are not divergences.
	Notes []string `json:"notes,omitempty"`
	// Redacted are the run's events whose payloads were redacted: the
	// replay compares the record up to the first of them and cannot check
	// anything from there on (its verdict says so; see Unchecked).
	Redacted []int64 `json:"redacted,omitempty"`
	// Erased are the run's recorded answers whose subject was erased
	// (rath erase): the replay checks nothing from the first erased
	// event on (see Unchecked). Set, even empty, for a run whose
	// run.started was erased (ErasedRun), which nothing replays.
	Erased []ErasedEvent `json:"erased,omitempty"`
}

// Verdict is the report in one line: "reproduced N of N events", with
// whether the run has not finished and what it waits for, or where it
// diverged.
func (r *Report) Verdict() string {
	if !r.OK() {
		return fmt.Sprintf("diverged: %d of %d events reproduced", r.Matched, r.Recorded)
	}
	v := fmt.Sprintf("reproduced %d of %d events", r.Matched, r.Recorded)
	if u := r.Unchecked(); u != "" {
		return v + "; " + u
	}
	if u := r.Unfinished(); u != "" {
		v += "; " + u
	}
	return v
}

// OK reports whether every recorded event was reproduced and nothing else.
func (r *Report) OK() bool { return r.Divergence == nil }

// Unchecked says what a replay of a run with redacted events could not
// check, or "" when none is redacted. Such a replay is reproduced except
// for what was redacted: a verdict of its own, not a full reproduction.
func (r *Report) Unchecked() string {
	if r.Erased != nil {
		return r.erasedUnchecked()
	}
	if len(r.Redacted) == 0 {
		return ""
	}
	n := min(len(r.Redacted), 10)
	seqs := make([]string, 0, n+1)
	for _, s := range r.Redacted[:n] {
		seqs = append(seqs, fmt.Sprint(s))
	}
	if len(r.Redacted) > len(seqs) {
		seqs = append(seqs, "…")
	}
	return fmt.Sprintf("%d redacted events (seq %s) and what follows the first could not be checked: their answers were deleted",
		len(r.Redacted), strings.Join(seqs, ", "))
}

// Unfinished says that the run has not finished and what it waits for,
// or "" for a finished run (and for one whose record a redaction cut).
func (r *Report) Unfinished() string {
	switch {
	case r.Finished, len(r.Redacted) > 0, r.Erased != nil:
		return ""
	case len(r.Waiting) > 0:
		return fmt.Sprintf("the run has not finished (waiting for %s)", strings.Join(r.Waiting, ", "))
	default:
		return "the run has not finished (its record ends here: it is running, crashed or was fenced)"
	}
}

// Option configures Run.
type Option func(*options)

type options struct {
	liveTools bool
	copies    string // where live tools' workspace copies go
	progress  func(done, total int64)
}

// WithProgress calls progress as the replay produces the run's events:
// how many so far, and how many the record holds.
func WithProgress(progress func(done, total int64)) Option {
	return func(o *options) { o.progress = progress }
}

// WithLiveTools re-runs the tools for real, in a fresh copy of each
// recorded workspace, instead of answering them from the record; their
// outputs and file changes are then compared with the recorded ones (a
// test of environment reproducibility).
func WithLiveTools() Option { return func(o *options) { o.liveTools = true } }

// WithCopiesIn makes the workspace copies of WithLiveTools in dir rather
// than the system's temporary directory: under the workspace root of a
// runtime whose backends are confined to one, so the copies open there.
// Empty means the temporary directory.
func WithCopiesIn(dir string) Option { return func(o *options) { o.copies = dir } }

// Run replays a recorded run of wf: wf's code runs again in a scratch
// store, answered from the record, and the events it writes are compared
// with the recorded ones. It returns a report; the error is for failures
// to replay at all (an unknown run, I/O), not for divergences.
func Run(ctx context.Context, rt *rath.Runtime, runID string, wf flow.Workflow, opts ...Option) (*Report, error) {
	var cfg options
	for _, o := range opts {
		o(&cfg)
	}
	col := &collector{run: runID, progress: cfg.progress} // expect sizes it
	// The scratch store opens while the record is outlined: neither needs
	// the other.
	type opened struct {
		sc  *scratch
		err error
	}
	scratchDone := make(chan opened, 1)
	go func() {
		// A strict replay answers every tool from the record and compares
		// only events: the scratch store need not keep blobs. Live tools
		// produce new outputs, which a divergence report shows, so it keeps
		// them.
		sc, err := newScratchWith(ctx, !cfg.liveTools, col)
		scratchDone <- opened{sc, err}
	}()
	info, toSeq, err := outlineRun(ctx, rt, runID)
	if err == nil {
		err = info.readStartRecord(ctx, rt)
	}
	if err != nil {
		if o := <-scratchDone; o.err == nil {
			o.sc.close()
		}
		return nil, err
	}
	// The oracle reads and indexes the record in the background, from now
	// on while the input lineage is copied and the run replays: its answers
	// wait for the entries they need.
	orc := startOracle(ctx, rt.Store(), runRecord(rt.Store(), runID, toSeq), info.total)
	defer orc.finish() // no reading outlives Run
	info.pending = orc.record
	o := <-scratchDone
	if o.err != nil {
		return nil, o.err
	}
	sc := o.sc
	defer sc.close()
	col.expect(info.total)
	if err := copyLineage(ctx, rt, sc.rt, info.started.InputSession, info.startSeq, info.memoryStreams...); err != nil {
		return nil, err
	}
	rctx := ctx
	if cfg.liveTools {
		// The workspaces to copy come from the whole record.
		if err := info.complete(); err != nil {
			return nil, err
		}
		orc.liveTools = true
		lineage, err := sc.rt.Store().Read(ctx, eventlog.Query{})
		if err != nil {
			return nil, err
		}
		remap, cleanup, err := workspaceCopies(ctx, rt.Store(), info, lineage, cfg.copies)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		rctx = liveToolsCtx(ctx, remap)
	}
	_, err = execute(rctx, sc.rt, info, wf, orc)
	// The comparison needs the whole record (execute has usually waited
	// for it already; not when it failed before the workflow ran).
	if cerr := info.complete(); cerr != nil {
		return nil, cerr
	}
	if i := slices.IndexFunc(info.events, isErased); i >= 0 {
		// Content of the record whose subject was erased: what follows
		// it has no answers to check it by, whether or not the workflow
		// failed on it.
		produced := col.events()
		matched, _ := compareIgnoring(info.events[:i], produced[:min(i, len(produced))], ignored)
		erased := erasedAnswers(info.events)
		if erased == nil {
			erased = []ErasedEvent{}
		}
		return &Report{Run: runID, Workflow: info.started.Workflow, Recorded: len(info.events), Produced: len(produced), Matched: matched,
			Incomplete: info.finished == nil, Finished: info.finished != nil, Answered: orc.answered, Redacted: info.redacted, Erased: erased}, nil
	}
	var waiting *flow.WaitingError
	if info.finished == nil && errors.As(err, &waiting) {
		err = nil // the record ends with the run waiting for a person
	}
	if err != nil {
		return nil, err
	}
	produced := col.events()
	rep := &Report{Run: runID, Workflow: info.started.Workflow, Recorded: len(info.events), Produced: len(produced),
		Incomplete: info.finished == nil, Finished: info.finished != nil, Answered: orc.answered, Redacted: info.redacted}
	if waiting != nil {
		rep.Waiting = slices.Clone(waiting.Requests)
	}
	var d *Divergence
	ignore := ignored
	if cfg.liveTools {
		// A fresh sandbox has a new id and new timings; outputs must match.
		ignore = withIgnored("sandbox_id")
	}
	rep.Matched, d = compareIgnoring(info.events, produced, ignore)
	if d != nil && d.Class == ClassExtra && info.finished == nil {
		// Every recorded event was reproduced; what the replay wrote
		// after them is what the run would have written next.
		d = nil
	}
	switch {
	case orc.diverged != nil && d != nil && d.Seq > 0 && d.Seq < orc.diverged.Seq && d.Class == ClassMismatch:
		// An earlier event already differed (a live tool's output, say):
		// that is the first divergence, the oracle's is its consequence.
		rep.Divergence = d
	case orc.diverged != nil:
		// The oracle saw the cause first (a changed prompt, an extra call).
		rep.Divergence = orc.diverged
		if rep.Divergence.Seq == 0 && d != nil {
			rep.Divergence.Seq = d.Seq
		}
	case d != nil:
		rep.Divergence = d
	default:
		rep.Divergence = orc.unconsumed()
	}
	if rep.Divergence != nil {
		explainOutputs(ctx, rep.Divergence, rt.Store(), sc.rt.Store())
	}
	return rep, nil
}

// explainOutputs adds the texts behind differing output blobs of a
// tool.returned divergence: hashes alone say nothing to a reader.
func explainOutputs(ctx context.Context, d *Divergence, recorded, produced *eventlog.Store) {
	if d.Type != events.TypeToolReturned || d.Want == "" || d.Got == "" {
		return
	}
	var w, g events.ToolReturned
	if json.Unmarshal([]byte(d.Want), &w) != nil || json.Unmarshal([]byte(d.Got), &g) != nil || w.OutputRef == g.OutputRef {
		return
	}
	wb, err1 := recorded.GetBlob(ctx, w.OutputRef)
	gb, err2 := produced.GetBlob(ctx, g.OutputRef)
	if err1 != nil || err2 != nil {
		return
	}
	d.Diff += fmt.Sprintf("\noutput:\n- %s\n+ %s", clip(string(wb)), clip(string(gb)))
}

// execute runs wf as the recorded run on target, answered by orc: it
// writes run.started as recorded, runs the workflow from the input
// session, and writes run.finished unless the record has none.
func execute(ctx context.Context, target *rath.Runtime, info *runInfo, wf flow.Workflow, orc *oracle) (*session.Session, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	orc.mu.Lock()
	orc.cancel = cancel
	orc.mu.Unlock()
	run := events.RunRef{ID: info.started.Run, Seed: info.started.Seed}
	rctx = proto.With(rctx, orc)
	// The run's appends on target: its own here, its workflow's through
	// the input session it adopts. No lease: target is a scratch store,
	// and what reaches the real one is fenced by the forwarder.
	rec := target.Store().In(eventlog.Scope{Run: run})
	writes := []eventlog.Write{{Stream: run.ID, Expected: eventlog.NoStream, Events: []events.Payload{info.started}}}
	if p := info.startRecord; p != nil {
		writes = append(writes, eventlog.Write{Stream: events.CounterfactualStream(run.ID), Expected: eventlog.NoStream, Events: []events.Payload{p}})
	}
	if _, err := rec.AppendWrites(rctx, writes...); err != nil {
		return nil, fmt.Errorf("replay: start: %w", err)
	}
	input, err := target.Session(rctx, info.started.InputSession)
	if err != nil {
		return nil, fmt.Errorf("replay: input session: %w", err)
	}
	out, werr := flow.Forward(rctx, wf, input.In(rec.Scope()))
	if err := info.complete(); err != nil { // finished is in the record's rest
		return out, err
	}
	if info.finished == nil && orc.strict {
		// The record stops here (a crash, a fence, a run still going or
		// waiting for a person): so does the replay.
		if errors.Is(werr, flow.ErrWaiting) {
			return out, werr
		}
		return out, nil
	}
	if errors.Is(werr, flow.ErrWaiting) {
		// Suspended again, for a person: the run stays open.
		return out, werr
	}
	if !orc.strict && flow.Suspends(ctx, werr) {
		return out, fmt.Errorf("%w: %w", rath.ErrRunLeftOpen, werr)
	}
	fin := events.RunFinished{Run: run.ID, Status: rath.RunOK}
	if out != nil {
		fin.OutputSession = out.ID()
	}
	if werr != nil {
		fin.Status, fin.Error = rath.RunError, werr.Error()
	}
	if _, err := rec.Append(context.WithoutCancel(rctx), run.ID, 1, fin); err != nil && !errors.Is(err, context.Canceled) {
		return out, fmt.Errorf("replay: finish: %w", err)
	}
	return out, nil
}

// collector is a projector on the scratch store that keeps the run's
// events as they are written, so the comparison does not read them back.
type collector struct {
	run string
	mu  sync.Mutex // protects the fields below
	evs []events.Event
	at  map[key]int // (stream, version) -> index in evs

	progress func(done, total int64) // nil: none
	total    int64
}

func (c *collector) Project(_ context.Context, _ *eventlog.Tx, ev *events.Event, _ events.Payload) error {
	if ev.RunID != c.run {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{ev.Stream, ev.Version}
	if i, ok := c.at[k]; ok {
		// A batch redone after a failed request writes the event again.
		c.evs[i] = *ev
		return nil
	}
	c.at[k] = len(c.evs)
	c.evs = append(c.evs, *ev)
	if c.progress != nil {
		c.progress(int64(len(c.evs)), c.total)
	}
	return nil
}

// expect sizes the collector for a record of n events (a faithful replay
// writes as many); call it before the run writes.
func (c *collector) expect(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total = int64(n)
	c.evs = make([]events.Event, 0, n)
	c.at = make(map[key]int, n)
}

func (c *collector) events() []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evs)
}
