package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/demo"
)

// runWorkflow is the name "rath run" records its runs under.
const runWorkflow = rath.AgentWorkflow

// buildDemo is the demo's rath.Builder: on its cassette unless the run
// was a --live demo, whose provider its parameters record.
func buildDemo(ctx context.Context, rt *rath.Runtime, params map[string]string, mode rath.Mode) (flow.Workflow, error) {
	if params["scripted"] != "false" {
		// Resuming the demo continues on its cassette, like the run did.
		return demo.Build(ctx, rt, nil)
	}
	spec, err := rath.ParseAgentSpec(params)
	if err != nil {
		return nil, err
	}
	prov, err := rt.AgentProvider(&spec, mode)
	if err != nil {
		return nil, err
	}
	return demo.Build(ctx, rt, prov)
}

// workflowForRun rebuilds the workflow a recorded run ran
// (rath.Runtime.RecordedWorkflow, in mode), and says what a user of this
// binary can do about one it cannot rebuild.
func (a *app) workflowForRun(ctx context.Context, rt *rath.Runtime, runID string, mode rath.Mode) (flow.Workflow, error) {
	wf, err := rt.RecordedWorkflow(ctx, runID, mode)
	if err == nil {
		return wf, nil
	}
	row, rerr := rt.Reader().Run(ctx, runID)
	if rerr != nil {
		return nil, err
	}
	var notRebuildable *flow.NotRebuildableError
	switch {
	case errors.Is(err, rath.ErrUnknownWorkflow):
		return nil, fmt.Errorf("%w; this binary also rebuilds %q and %q runs, and runs whose record describes their workflow (recorded since %s). To replay your own workflows, build a rath binary whose main calls cli.Main with a Config.Setup that registers them (package github.com/gorath/rath/cmd/rath/cli), or call replay.Run from your program",
			err, runWorkflow, demo.Name, flow.SpecParam)
	case errors.As(err, &notRebuildable) && mode == rath.LiveMode && replayable(ctx, rt, runID):
		return nil, fmt.Errorf("%w: run %s (workflow %q) was started by a program; resume it with replay.Resume from that program, or build a rath binary that registers %q (cli.Config.Setup)",
			flow.ErrNotRebuildable, runID, row.Workflow, row.Workflow)
	case errors.As(err, &notRebuildable):
		return nil, fmt.Errorf("run %s (workflow %q) cannot be replayed or resumed by this binary: %w. Replay it with replay.Run from the program that ran it, or build a rath binary that registers %q (cli.Config.Setup)",
			runID, row.Workflow, notRebuildable, row.Workflow)
	}
	return nil, err
}

// replayable reports whether runID's workflow rebuilds for a replay: a
// run whose live rebuild was refused then is a program's, which it
// describes, rather than one holding Go code.
func replayable(ctx context.Context, rt *rath.Runtime, runID string) bool {
	_, err := rt.RecordedWorkflow(ctx, runID, rath.ReplayMode)
	return err == nil
}
