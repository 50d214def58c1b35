package replay

import (
	"context"
	"fmt"
	"maps"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	proto "github.com/gorath/rath/internal/oracle"
)

// ForkAt replays a run up to the event at seq and goes on live from there,
// as a new run (a new id and seed, linked to the original by parent_run)
// on a fork of the original input session. Model and tool calls the
// original made up to seq are answered from its record; wf may change
// what happens after (another provider, another prompt), but a call before
// seq that differs from the record fails with a *Divergence.
func ForkAt(ctx context.Context, rt *rath.Runtime, runID string, seq int64, wf flow.Workflow, opts ...rath.RunOption) (*rath.Run, error) {
	info, err := loadRun(ctx, rt, runID)
	if err != nil {
		return nil, err
	}
	if seq < info.startSeq {
		return nil, fmt.Errorf("replay: fork at seq %d: run %s starts at seq %d", seq, runID, info.startSeq)
	}
	orc, err := newOracle(ctx, rt.Store(), info.events, seq, false)
	if err != nil {
		return nil, err
	}
	input, err := rt.SessionAt(ctx, info.started.InputSession, info.startSeq-1)
	if err != nil {
		return nil, fmt.Errorf("replay: fork input: %w", err)
	}
	if input, err = input.Fork(ctx); err != nil {
		return nil, fmt.Errorf("replay: fork input: %w", err)
	}
	rctx, cancel := context.WithCancel(proto.With(ctx, orc))
	defer cancel()
	orc.mu.Lock()
	orc.cancel = cancel
	orc.mu.Unlock()
	// The fork runs wf, which may differ from the original's workflow: its
	// spec is wf's (rt.Start records it), not the one the original recorded.
	params := maps.Clone(info.started.Params)
	delete(params, flow.SpecParam)
	// A fork is its parent's tenant's.
	base := []rath.RunOption{rath.WithParentRun(runID), rath.WithParams(params), rath.WithTenant(info.started.Tenant)}
	run, err := rt.Start(rctx, info.started.Workflow, wf, input, append(base, opts...)...)
	if orc.diverged != nil {
		return run, orc.diverged
	}
	return run, err
}
