package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	proto "github.com/gorath/rath/internal/oracle"
	"github.com/gorath/rath/session"
)

// The parameters a counterfactual run records (rath.WithParams) beside
// the original's: what it replaced, where, and with what. Its
// counterfactual.forked event (events.CounterfactualForked), written with
// its run.started, says the same as a typed record that verify checks.
const (
	CounterfactualOfParam = "counterfactual_of"          // the original run
	CounterfactualAtParam = "counterfactual_at"          // the seq of the replaced event
	ReplacedParam         = "counterfactual_replaced"    // the replaced event's leaf hash
	ReplacementParam      = "counterfactual_replacement" // the replacement's blob hash
)

// Replacement is what a counterfactual puts in place of a recorded
// event: exactly one of Answer (for a provider.called: the model's
// answer) and ToolResult (for a tool.returned: the tool's output).
type Replacement struct {
	Answer     *model.Response
	ToolResult *ToolResult
}

// ToolResult is a tool's output put in place of a recorded one.
type ToolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Counterfactual is a fork of a recorded run at one of its model answers
// or tool results, made by NewCounterfactual and continued by Continue.
// It is not safe for concurrent use.
type Counterfactual struct {
	Run string // the original run
	Seq int64  // the replaced event
	// Replaced is the replaced event's leaf hash, Replacement the
	// replacement's blob hash: the new run records both.
	Replaced, Replacement string
	// Session is the fork the new run continues: the original's session
	// as the model saw it at the call that made (or answered for) the
	// replaced event. It references the original's chunks; nothing is
	// copied.
	Session *session.Session

	call      int64  // seq of the model call the fork starts from
	agent     string // the agent that made it
	blob      []byte // the replacement's bytes
	replacing Replacement
}

// NewCounterfactual forks run at seq, a recorded provider.called (with
// rep.Answer) or tool.returned (with rep.ToolResult): it forks the
// session the call was made on as it was just before the call and stores
// the replacement. The fork references the original's events (a
// session.forked event and the replacement's blob are all it adds). An
// event that is not of the run, or of another type, is ErrCounterfactual.
func NewCounterfactual(ctx context.Context, rt *rath.Runtime, run string, seq int64, rep Replacement) (*Counterfactual, error) {
	if (rep.Answer == nil) == (rep.ToolResult == nil) {
		return nil, fmt.Errorf("%w: give one replacement, an answer or a tool result", ErrCounterfactual)
	}
	store := rt.Store()
	evs, err := store.Read(ctx, eventlog.Query{FromSeq: seq, ToSeq: seq})
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].RunID != run {
		return nil, fmt.Errorf("%w: run %s has no event at seq %d", ErrCounterfactual, run, seq)
	}
	ev := evs[0]
	cf := &Counterfactual{Run: run, Seq: seq, Replaced: ev.Hash, replacing: rep}
	switch {
	case ev.Type == events.TypeProviderCalled && rep.Answer != nil:
		p, err := decodeAs[events.ProviderCalled](ev)
		if err != nil {
			return nil, err
		}
		cf.call, cf.agent = seq, p.Agent
		cf.blob, err = json.Marshal(rep.Answer)
		if err != nil {
			return nil, err
		}
	case ev.Type == events.TypeToolReturned && rep.ToolResult != nil:
		// The fork starts at the model call whose answer asked for the
		// tool: the last one on the session before the result.
		calls, err := store.Read(ctx, eventlog.Query{Stream: ev.Stream, Types: []string{events.TypeProviderCalled}, ToSeq: seq})
		if err != nil {
			return nil, err
		}
		if len(calls) == 0 {
			return nil, fmt.Errorf("%w: no model call precedes the tool result at seq %d", ErrCounterfactual, seq)
		}
		last := calls[len(calls)-1]
		p, err := decodeAs[events.ProviderCalled](last)
		if err != nil {
			return nil, err
		}
		cf.call, cf.agent, cf.blob = last.Seq, p.Agent, []byte(rep.ToolResult.Content)
	default:
		want := "an answer (--answer) replaces a provider.called event, a tool result (--tool-result) a tool.returned event"
		return nil, fmt.Errorf("%w: seq %d is a %s event: %s", ErrCounterfactual, seq, ev.Type, want)
	}
	cf.Replacement = eventlog.BlobHash(cf.blob)
	at, err := rt.SessionAt(ctx, ev.Stream, cf.call-1)
	if err != nil {
		return nil, fmt.Errorf("replay: counterfactual: session %s: %w", ev.Stream, err)
	}
	if cf.Session, err = at.Fork(ctx); err != nil {
		return nil, fmt.Errorf("replay: counterfactual: %w", err)
	}
	return cf, nil
}

func decodeAs[T any](ev events.Event) (*T, error) {
	p, err := ev.Decode()
	if err != nil {
		return nil, err
	}
	t, ok := any(p).(*T)
	if !ok {
		return nil, fmt.Errorf("%w: seq %d is %s", ErrCounterfactual, ev.Seq, ev.Type)
	}
	return t, nil
}

// Continue runs agent, the workflow of the agent that made the forked
// call, on the fork as a new run linked to the original (parent_run),
// recording the counterfactual's parameters and its counterfactual.forked
// event. agent must be one *flow.Agent: a workflow of several agents is a
// *NotOneAgentError (ErrCounterfactual), and nothing is run. Its first model call gets
// the replaced answer (or the recorded one, whose tool results include
// the replaced result); after that calls are answered from the original's
// record while the requests match. Live, a changed request and all that
// follows go to agent's providers; not live, the run stops there and
// Continue returns the *Divergence (Unanswered) beside the run.
func (cf *Counterfactual) Continue(ctx context.Context, rt *rath.Runtime, agent flow.Workflow, live bool) (*rath.Run, error) {
	store := rt.Store()
	started, err := rt.RunStarted(ctx, cf.Run)
	if err != nil {
		return nil, err
	}
	if _, ok := agent.(*flow.Agent); !ok {
		return nil, &NotOneAgentError{Run: cf.Run, Workflow: started.Workflow}
	}
	rest, err := store.Read(ctx, eventlog.Query{RunID: cf.Run, FromSeq: cf.call})
	if err != nil {
		return nil, err
	}
	orc, err := newOracle(ctx, store, rest, 0, !live)
	if err != nil {
		return nil, err
	}
	orc.liveOnChange = live
	orc.blobs[cf.Replacement] = cf.blob
	if err := cf.substitute(orc); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(proto.With(ctx, orc))
	defer cancel()
	orc.mu.Lock()
	orc.cancel = cancel
	orc.mu.Unlock()
	params := maps.Clone(started.Params)
	delete(params, flow.SpecParam)
	if params == nil {
		params = map[string]string{}
	}
	params[CounterfactualOfParam], params[CounterfactualAtParam] = cf.Run, strconv.FormatInt(cf.Seq, 10)
	params[ReplacedParam], params[ReplacementParam] = cf.Replaced, cf.Replacement
	run, err := rt.Start(rctx, started.Workflow, agent, cf.Session, rath.WithParentRun(cf.Run), rath.WithParams(params), rath.WithTenant(started.Tenant), rath.WithStartRecord(cf.record))
	if orc.diverged != nil {
		return run, orc.diverged
	}
	return run, err
}

// record is the counterfactual.forked write of the new run id.
func (cf *Counterfactual) record(id string) eventlog.Write {
	kind := events.ReplacedAnswer
	if cf.replacing.ToolResult != nil {
		kind = events.ReplacedToolResult
	}
	return eventlog.Write{Stream: events.CounterfactualStream(id), Expected: eventlog.NoStream, Events: []events.Payload{&events.CounterfactualForked{
		Run: id, Original: cf.Run, At: cf.Seq, Kind: kind, Replaced: cf.Replaced, Replacement: cf.Replacement, Session: cf.Session.ID()}}}
}

// substitute puts the replacement in the oracle's record.
func (cf *Counterfactual) substitute(o *oracle) error {
	if cf.replacing.Answer != nil {
		for i, a := range o.models[cf.agent] {
			if a.seq == cf.Seq && a.called != nil {
				called := *a.called
				called.ResponseRef = cf.Replacement
				o.models[cf.agent][i].called = &called
				return nil
			}
		}
		return fmt.Errorf("%w: the model call at seq %d is not in the record of agent %s", ErrCounterfactual, cf.Seq, cf.agent)
	}
	for _, q := range o.tools {
		for i, t := range q {
			if t.seq == cf.Seq {
				ret := *t.ret
				ret.OutputRef, ret.IsError, ret.ErrorKind, ret.Error, ret.ExitCode = cf.Replacement, cf.replacing.ToolResult.IsError, "", "", nil
				ret.Files, ret.Attachments = nil, nil
				q[i].ret = &ret
				return nil
			}
		}
	}
	return fmt.Errorf("%w: the tool result at seq %d is not in the record", ErrCounterfactual, cf.Seq)
}
