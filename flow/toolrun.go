package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/oracle"
	"github.com/gorath/rath/session"
)

// toolOutcome is one finished tool call.
type toolOutcome struct {
	call     events.ToolCall
	result   ToolResult
	kind     string // error kind, "" on success
	err      error
	duration time.Duration
	seq      int64 // the recorded tool.returned's seq, when an oracle knows the call
	wait     error // the tool asked a person (Ask): the round suspends, nothing is recorded
}

// content is the text the model sees for the call.
func (o toolOutcome) content() string {
	if o.kind != "" {
		return fmt.Sprintf("error (%s): %s", o.kind, o.message())
	}
	if o.result.Content == "" {
		// Some APIs reject an empty tool message.
		return "(no output)"
	}
	return o.result.Content
}

// message is the failure's text without its kind (the content puts the
// kind in front), as recorded on tool.returned so a replay rebuilds the
// same content.
func (o toolOutcome) message() string {
	err := o.err
	var te *ToolError
	if errors.As(err, &te) && te.Err != nil {
		err = te.Err
	}
	return err.Error()
}

// runRound runs the round's tool calls (already recorded as tool.called):
// consecutive parallel-safe calls run concurrently, others one at a time.
// Each call's tool.returned is recorded as soon as the call finishes, so a
// crash repeats only the calls that were still running; the result chunks
// follow in call order with the round's last result, so the transcript
// does not depend on which call finished first.
func (a *Agent) runRound(ctx context.Context, s *session.Session, path string, calls []events.ToolCall) (*session.Session, error) {
	calls, gated, err := a.gate(ctx, s, path, calls)
	if err != nil {
		return s, err
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &roundWriter{s: s, path: path, chunks: make([]events.Chunk, len(calls)), left: len(calls)}
	for i := 0; i < len(calls); {
		j := i + 1
		if a.parallelSafe(calls[i].Name) {
			for j < len(calls) && a.parallelSafe(calls[j].Name) {
				j++
			}
		}
		var g []*toolOutcome
		if gated != nil {
			g = gated[i:j]
		}
		if err := a.runGroup(ctx, tctx, cancel, s, w, calls[i:j], g, i); err != nil {
			return w.s, err
		}
		i = j
	}
	return w.s, nil
}

// runGroup runs calls that may run together (first is the index of
// calls[0] in the round) and records each outcome through w. Outcomes an
// oracle answers from a record (seq set) are written in recorded order,
// which is the order they finished in when recorded, so a replay writes
// the same versions; outcomes without one follow in the order they finish.
// tctx is the tools' context: cancel stops them when a write fails.
// gated, when not nil, holds per call an outcome a person's decision
// settled (a rejection): such a call does not run.
func (a *Agent) runGroup(ctx, tctx context.Context, cancel context.CancelFunc, s *session.Session, w *roundWriter, calls []events.ToolCall, gated []*toolOutcome, first int) error {
	type finished struct {
		k int
		o toolOutcome
	}
	ch := make(chan finished, len(calls)) // never blocks a tool's goroutine
	var recorded []int                    // calls with a recorded seq
	seqs := make([]int64, len(calls))
	for k, c := range calls {
		o, settled := a.consult(tctx, s, c)
		if seqs[k] = o.seq; o.seq != 0 {
			recorded = append(recorded, k)
		}
		if settled {
			ch <- finished{k, o}
			continue
		}
		if gated != nil && gated[k] != nil {
			g := *gated[k]
			g.seq = o.seq
			ch <- finished{k, g}
			continue
		}
		go func() { ch <- finished{k, a.runTool(tctx, s, o)} }()
	}
	sort.Slice(recorded, func(x, y int) bool { return seqs[recorded[x]] < seqs[recorded[y]] })
	outs := make([]*toolOutcome, len(calls))
	var free []int // finished calls without a recorded seq, in finish order
	next := 0      // recorded[next] is the next recorded call to write
	var err error
	for range calls {
		f := <-ch
		outs[f.k] = &f.o
		if err != nil {
			continue // drain: every goroutine has sent before we return
		}
		if err = ctx.Err(); err != nil {
			continue // a cancelled round records nothing more
		}
		if f.o.wait != nil {
			// The tool waits for a person: the round stops unrecorded
			// from here, and the resumed run calls the tool again.
			err = f.o.wait
			cancel()
			continue
		}
		if seqs[f.k] == 0 {
			free = append(free, f.k)
		}
		for ; err == nil && next < len(recorded) && outs[recorded[next]] != nil; next++ {
			err = w.write(ctx, *outs[recorded[next]], first+recorded[next])
		}
		for ; err == nil && next == len(recorded) && len(free) > 0; free = free[1:] {
			err = w.write(ctx, *outs[free[0]], first+free[0])
		}
		if err != nil {
			cancel()
		}
	}
	return err
}

// roundWriter records a round's outcomes one commit each.
type roundWriter struct {
	s      *session.Session
	path   string
	chunks []events.Chunk // the result chunks, in call order
	left   int            // outcomes not yet written
}

// write records o, the round's i-th call; the round's last outcome carries
// every result chunk in the same commit.
func (w *roundWriter) write(ctx context.Context, o toolOutcome, i int) error {
	content := o.content()
	ret := events.ToolReturned{Session: w.s.ID(), Agent: w.path, CallID: o.call.ID, Tool: o.call.Name,
		OutputRef: eventlog.BlobHash([]byte(content)), OutputSize: len(content), ExitCode: o.result.ExitCode,
		DurationMS: o.duration.Milliseconds(), Files: o.result.Files, Backend: o.result.Backend, SandboxID: o.result.SandboxID,
		IsError: o.result.IsError, Attachments: o.result.Attachments, Truncated: o.result.Truncated}
	chunk := events.Chunk{Role: events.RoleToolResult, ToolCallID: o.call.ID, Name: o.call.Name, Content: content, Author: w.path}
	if o.kind != "" {
		ret.ErrorKind, ret.Error = o.kind, o.message()
		chunk.Meta = map[string]string{"error_kind": o.kind}
	} else if o.result.IsError {
		chunk.Meta = map[string]string{"is_error": "true"}
	}
	w.chunks[i] = chunk
	w.left--
	rec := session.Record{Blobs: append([][]byte{[]byte(content)}, o.result.Blobs...), Events: []events.Payload{ret}}
	if w.left == 0 {
		rec.Chunks = w.chunks
	}
	s, err := w.s.Record(ctx, rec)
	if err != nil {
		return err
	}
	w.s = s
	return nil
}

func (a *Agent) parallelSafe(name string) bool {
	t, ok := a.tools[name]
	if !ok {
		return true // an unknown tool does nothing: it cannot race
	}
	ps, ok := t.(ParallelSafe)
	return ok && ps.ParallelSafe()
}

func (a *Agent) toolNames() string {
	names := make([]string, 0, len(a.tools))
	for n := range a.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// consult asks the oracle, if one is installed, for the call's recorded
// outcome; settled reports that the outcome is known without running the
// tool. o carries the recorded seq either way.
func (a *Agent) consult(ctx context.Context, s *session.Session, call events.ToolCall) (o toolOutcome, settled bool) {
	o.call = call
	or := oracle.From(ctx)
	if or == nil {
		return o, false
	}
	ans, err := or.Tool(ctx, oracle.ToolCall{Session: s.ID(), Agent: Path(ctx), CallID: call.ID, Tool: call.Name, Arguments: call.Arguments})
	if err != nil {
		o.kind, o.err = ToolErrFailed, err
		return o, true
	}
	o.seq = ans.Seq
	// Questions the tool asked while it ran are recorded again: a replay
	// answers the call without running it.
	for _, q := range ans.Questions {
		if _, err := s.Manager().Appender().Append(ctx, events.ApprovalStream(q.ID), eventlog.NoStream, q); err != nil && !errors.Is(err, eventlog.ErrConflict) {
			o.kind, o.err = ToolErrFailed, fmt.Errorf("flow: record question %s again: %w", q.ID, err)
			return o, true
		}
	}
	if ans.Live {
		return o, false
	}
	o.result, o.duration = ToolResult(ans.Result), ans.Duration
	if ans.ErrorKind != "" {
		o.kind, o.err = ans.ErrorKind, errors.New(ans.Error)
	}
	return o, true
}

// runTool runs o's call for real and turns every failure into a typed
// outcome.
func (a *Agent) runTool(ctx context.Context, s *session.Session, in toolOutcome) (o toolOutcome) {
	o = in
	call := o.call
	start := time.Now()
	defer func() {
		if o.duration == 0 {
			o.duration = time.Since(start)
		}
	}()
	t, ok := a.tools[call.Name]
	if !ok {
		o.kind, o.err = ToolErrUnknown, fmt.Errorf("no tool named %q; available tools: %s", call.Name, a.toolNames())
		return o
	}
	args := json.RawMessage(call.Arguments)
	if strings.TrimSpace(call.Arguments) == "" {
		args = json.RawMessage(`{}`)
	}
	if !json.Valid(args) {
		o.kind, o.err = ToolErrBadJSON, fmt.Errorf("arguments are not valid JSON: %.200q", call.Arguments)
		return o
	}
	if v, ok := t.(ArgumentValidator); ok {
		if err := v.ValidateArguments(args); err != nil {
			o.kind, o.err = ToolErrSchema, fmt.Errorf("arguments do not match the schema of %s: %v", call.Name, err)
			return o
		}
	}
	timeout := DefaultToolTimeout
	if tt, ok := t.(TimeoutTool); ok && tt.Timeout() > 0 {
		timeout = tt.Timeout()
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type ret struct {
		res ToolResult
		err error
	}
	done := make(chan ret, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- ret{err: &ToolError{Kind: ToolErrPanic, Err: fmt.Errorf("tool %s panicked: %v", call.Name, r)}}
			}
		}()
		res, err := t.Call(context.WithValue(tctx, callKey{}, call.ID), s, slices.Clone(args))
		done <- ret{res, err}
	}()
	var r ret
	select {
	case r = <-done:
	case <-tctx.Done():
		// A tool that ignores its context is abandoned, not waited for.
		r.err = tctx.Err()
	}
	o.result = r.res
	switch {
	case r.err == nil:
	case errors.Is(r.err, ErrWaiting):
		o.wait = r.err
	case errors.Is(r.err, context.DeadlineExceeded) && ctx.Err() == nil:
		o.kind, o.err = ToolErrTimeout, fmt.Errorf("tool %s timed out after %s", call.Name, timeout)
	default:
		o.err = r.err
		o.kind = ToolErrFailed
		var te *ToolError
		if errors.As(r.err, &te) && te.Kind != "" {
			o.kind = te.Kind
		}
	}
	return o
}
