package rath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// RecordedWorkflow returns the workflow run runID ran, for a replay
// (replay.Run): the workflow registered under the run's name (Register,
// Start), else the one its run.started describes (flow.SpecParam),
// rebuilt with providers that refuse every call (ErrReplayCalled) and
// tools that answer only from the record. It fails with
// ErrUnknownWorkflow for a run whose workflow is neither registered nor
// described, with a *flow.NotRebuildableError for a description holding
// the program's own Go code, with events.ErrRedacted for a run whose
// start was redacted, and with projections.ErrNotFound for an unknown
// run. `rath replay`, `rath serve` and a program's own tools rebuild runs
// through it.
func (rt *Runtime) RecordedWorkflow(ctx context.Context, runID string) (flow.Workflow, error) {
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
	opts := flow.RebuildOptions{Client: refuseClient{}}
	if specUsesMemory(spec) {
		if opts.Memory, err = rt.OpenMemory(ctx, memory.BackendConfig{}); err != nil {
			return nil, err
		}
	}
	return spec.Rebuild(opts)
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
