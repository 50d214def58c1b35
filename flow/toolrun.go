package flow

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

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// toolOutcome is one finished tool call.
type toolOutcome struct {
	call     events.ToolCall
	result   ToolResult
	kind     string // error kind, "" on success
	err      error
	duration time.Duration
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

// runTools runs one round's calls: consecutive parallel-safe calls run
// concurrently, others one at a time; outcomes come back in call order.
func (a *Agent) runTools(ctx context.Context, s *session.Session, calls []events.ToolCall) []toolOutcome {
	out := make([]toolOutcome, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		if a.parallelSafe(calls[i].Name) {
			for j < len(calls) && a.parallelSafe(calls[j].Name) {
				j++
			}
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Go(func() { out[k] = a.runTool(ctx, s, calls[k]) })
		}
		wg.Wait()
		i = j
	}
	return out
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

// runTool runs one call and turns every failure into a typed outcome.
func (a *Agent) runTool(ctx context.Context, s *session.Session, call events.ToolCall) (o toolOutcome) {
	o.call = call
	start := time.Now()
	defer func() {
		if o.duration == 0 {
			o.duration = time.Since(start)
		}
	}()
	if or := oracleFrom(ctx); or != nil {
		ans, err := or.Tool(ctx, ToolCall{Session: s.ID(), Agent: Path(ctx), CallID: call.ID, Tool: call.Name, Arguments: call.Arguments})
		if err != nil {
			o.kind, o.err = ToolErrFailed, err
			return o
		}
		if !ans.Live {
			o.result, o.duration = ans.Result, ans.Duration
			if ans.ErrorKind != "" {
				o.kind, o.err = ans.ErrorKind, replayedError(ans.Error)
			}
			return o
		}
	}
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
		res, err := t.Call(tctx, s, slices.Clone(args))
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
