package rath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/projections"
)

// ErrReplayCalled is what the providers of a workflow RecordedWorkflow
// rebuilt answer if a replay ever asks them: every call must come from
// the record.
var ErrReplayCalled = errors.New("rath: a replay must not call the model: the call is not in the record")

// Builder builds the workflow of a run from its parameters
// (run.started's, or a submission's), for mode: a program registers one
// (Runtime.RegisterBuilder) for a workflow whose shape its parameters
// choose, so that RecordedWorkflow and a fleet worker build its runs. A
// live build may add to params what it resolved (a provider, tool
// specs): a run that has not started records them.
type Builder func(ctx context.Context, rt *Runtime, params map[string]string, mode Mode) (flow.Workflow, error)

// RegisterBuilder makes b build the runs of workflow name. Registering a
// name twice, or AgentWorkflow (the runtime builds it), panics, like
// sql.Register. A workflow registered by name (Register) comes before a
// builder.
func (rt *Runtime) RegisterBuilder(name string, b Builder) {
	rt.wfs.mu.Lock()
	defer rt.wfs.mu.Unlock()
	if b == nil || name == "" || name == AgentWorkflow {
		panic("rath: RegisterBuilder needs a name other than " + AgentWorkflow + " and a builder")
	}
	if _, dup := rt.wfs.b[name]; dup {
		panic("rath: builder of " + name + " registered twice")
	}
	rt.wfs.b[name] = b
}

// built reports whether runs of name are built from their parameters:
// the built-in agent, or a registered Builder. Start registers no
// workflow under such a name, so a registered one is the program's.
func (rt *Runtime) built(name string) bool {
	if name == AgentWorkflow {
		return true
	}
	rt.wfs.mu.RLock()
	defer rt.wfs.mu.RUnlock()
	_, ok := rt.wfs.b[name]
	return ok
}

// BuildWorkflow builds a run of workflow name from its parameters, for
// mode: the workflow registered under name (Register) if there is one,
// else the built-in agent (AgentWorkflow, from ParseAgentSpec(params)),
// else the registered Builder. In LiveMode the built-in agent adds what
// it resolved to params (AgentSpec.Params): record them with the run.
// It fails with ErrUnknownWorkflow for a name none of these knows.
func (rt *Runtime) BuildWorkflow(ctx context.Context, name string, params map[string]string, mode Mode) (flow.Workflow, error) {
	wf, unknown := rt.Workflow(name)
	if unknown == nil {
		return wf, nil
	}
	if name == AgentWorkflow {
		spec, err := ParseAgentSpec(params)
		if err != nil {
			return nil, err
		}
		agent, err := rt.BuildAgent(ctx, &spec, AgentOptions{Mode: mode})
		if err != nil {
			return nil, err
		}
		if mode == LiveMode && params != nil {
			maps.Copy(params, spec.Params())
		}
		return agent, nil
	}
	rt.wfs.mu.RLock()
	b, ok := rt.wfs.b[name]
	rt.wfs.mu.RUnlock()
	if !ok {
		return nil, unknown
	}
	return b(ctx, rt, params, mode)
}

// RecordedWorkflow returns the workflow run runID ran, rebuilt for mode.
//
// It is, in order: the workflow registered under the run's name
// (Register, Start); the built-in agent (AgentWorkflow) or a registered
// Builder, from the parameters the run's run.started recorded; else the
// workflow its run.started describes (flow.SpecParam). In ReplayMode
// (replay.Run) providers refuse every call (ErrReplayCalled) and tools
// answer only from the record; a run of the built-in agent recorded
// before its provider was (flow.ProviderParam) gets it from its first
// model call. In LiveMode (replay.Resume, replay.ForkAt) providers are
// today's and tools are connected, with the vendor, model and sampling
// the run recorded.
//
// It fails with ErrUnknownWorkflow for a run whose workflow is neither
// registered, built nor described; with a *flow.NotRebuildableError for
// a description holding the program's own Go code, and in LiveMode for
// any described run (its tools are the program's: resume it from that
// program); with events.ErrRedacted for a run whose start was redacted;
// with projections.ErrNotFound for an unknown run. `rath replay`,
// `rath resume`, `rath serve` and fleet workers resolve runs through it.
func (rt *Runtime) RecordedWorkflow(ctx context.Context, runID string, mode Mode) (flow.Workflow, error) {
	row, err := rt.reader.Run(ctx, runID)
	if err != nil {
		if errors.Is(err, projections.ErrNotFound) {
			// A run whose start was redacted is gone from the read models
			// but not from the log: say so rather than "not found".
			if seqs, rerr := rt.store.RedactedInRun(ctx, runID, 0); rerr == nil && len(seqs) > 0 {
				return nil, fmt.Errorf("run %s cannot be rebuilt: its events were redacted (%d of them, seqs %d to %d; rath verify lists by whom and why): %w",
					runID, len(seqs), seqs[0], seqs[len(seqs)-1], events.ErrRedacted)
			}
		}
		return nil, err
	}
	wf, unknown := rt.Workflow(row.Workflow)
	if unknown == nil {
		return wf, nil
	}
	started, err := rt.RunStarted(ctx, runID)
	if err != nil {
		return nil, err
	}
	if rt.built(row.Workflow) {
		params := maps.Clone(started.Params)
		if params == nil {
			params = map[string]string{}
		}
		if mode == ReplayMode {
			if params, err = rt.recordedProviderParams(ctx, runID, params); err != nil {
				return nil, err
			}
		}
		wf, err := rt.BuildWorkflow(ctx, row.Workflow, params, mode)
		if err != nil {
			return nil, fmt.Errorf("run %s (workflow %q): %w", runID, row.Workflow, err)
		}
		return wf, nil
	}
	raw, ok := started.Params[flow.SpecParam]
	if !ok {
		return nil, unknown
	}
	var spec flow.Spec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return nil, fmt.Errorf("run %s: its recorded workflow spec: %w", runID, err)
	}
	if err := spec.Check(); err != nil {
		return nil, fmt.Errorf("run %s (workflow %q): %w", runID, row.Workflow, err)
	}
	if mode == LiveMode {
		// The record says what the model saw of its tools, not what they
		// do: going on live would call tools that are only descriptions.
		return nil, fmt.Errorf("run %s (workflow %q): %w", runID, row.Workflow, &flow.NotRebuildableError{Path: "root",
			Reason: "a program's workflow, whose tools are its own code: resume or fork it from that program (replay.Resume), or register it on this runtime (Register, RegisterBuilder)"})
	}
	opts := flow.RebuildOptions{Client: refuseClient{}}
	if specUsesMemory(spec) {
		if opts.Memory, err = rt.OpenMemory(ctx, memory.BackendConfig{}); err != nil {
			return nil, err
		}
	}
	return spec.Rebuild(opts)
}

// recordedProviderParams gives the params of a built run recorded before
// flow.ProviderParam existed the provider its record shows
// (withRecordedProvider), so that a replay rebuilds it.
func (rt *Runtime) recordedProviderParams(ctx context.Context, runID string, params map[string]string) (map[string]string, error) {
	if _, ok := params[flow.ProviderParam]; ok {
		return params, nil
	}
	spec, err := ParseAgentSpec(params)
	if err != nil {
		// Not the agent's parameters (a Builder's own): they say
		// nothing of a provider, and the build says what is wrong.
		return params, nil
	}
	if err := rt.withRecordedProvider(ctx, runID, &spec); err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec.Resolved)
	if err != nil {
		return nil, err
	}
	params[flow.ProviderParam] = string(b)
	return params, nil
}

// RunStarted returns the run.started event of run runID: its workflow
// name, seed and the parameters it recorded (rath.WithParams).
func (rt *Runtime) RunStarted(ctx context.Context, runID string) (*events.RunStarted, error) {
	evs, err := rt.store.ReadStream(ctx, runID, 1)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("run %s has no run.started event", runID)
	}
	p, err := evs[0].Decode()
	if err != nil {
		return nil, err
	}
	started, ok := p.(*events.RunStarted)
	if !ok {
		return nil, fmt.Errorf("run %s starts with %s, not run.started", runID, evs[0].Type)
	}
	return started, nil
}

// refuseClient answers every call with ErrReplayCalled.
type refuseClient struct{}

func (refuseClient) Complete(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, &model.Error{Kind: model.KindScript, Provider: "replay", Err: ErrReplayCalled}
}

func specUsesMemory(s flow.Spec) bool {
	if len(s.Memory) > 0 {
		return true
	}
	for _, c := range s.Steps {
		if specUsesMemory(c) {
			return true
		}
	}
	return false
}
