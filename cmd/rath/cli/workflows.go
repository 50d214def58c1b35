package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/demo"
)

// runWorkflow is the name "rath run" records its runs under.
const runWorkflow = "rath.run"

type refuseClient struct{}

func (refuseClient) Complete(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, &model.Error{Kind: model.KindScript, Provider: "replay", Err: rath.ErrReplayCalled}
}

// workflowForRun rebuilds the workflow a recorded run ran, from its name
// and parameters. With live, its provider can make real calls (resume);
// without, any call fails (replay answers everything from the record).
// Registered workflows and runs whose record describes their workflow
// are the library's (rath.Runtime.RecordedWorkflow); this binary adds
// the built-in agent and the demo.
func (a *app) workflowForRun(ctx context.Context, rt *rath.Runtime, runID string, live bool) (flow.Workflow, error) {
	row, err := rt.Reader().Run(ctx, runID)
	if err != nil {
		_, err = rt.RecordedWorkflow(ctx, runID) // it says whether the run was redacted
		return nil, err
	}
	// A workflow the program registered (Config.Setup) comes first, so a
	// program can also take over the built-in names.
	if wf, err := rt.Workflow(row.Workflow); err == nil {
		return wf, nil
	}
	switch row.Workflow {
	case runWorkflow:
		started, err := rt.RunStarted(ctx, runID)
		if err != nil {
			return nil, err
		}
		params := started.Params
		if !live {
			if params, err = withRecordedProvider(ctx, rt, runID, params); err != nil {
				return nil, err
			}
		}
		return a.agentFromParams(ctx, rt, params, live, nil)
	case demo.Name:
		started, err := rt.RunStarted(ctx, runID)
		if err != nil {
			return nil, err
		}
		if started.Params["scripted"] != "false" {
			// Resuming the demo continues on its cassette, like the run did.
			return demo.Build(ctx, rt, nil)
		}
		// A --live demo: its provider, as the run recorded it.
		params := started.Params
		if !live {
			if params, err = withRecordedProvider(ctx, rt, runID, params); err != nil {
				return nil, err
			}
		}
		prov, err := a.providerFromParams(rt, params, live)
		if err != nil {
			return nil, err
		}
		return demo.Build(ctx, rt, prov)
	}
	wf, err := rt.RecordedWorkflow(ctx, runID)
	var notRebuildable *flow.NotRebuildableError
	switch {
	case errors.Is(err, rath.ErrUnknownWorkflow):
		return nil, fmt.Errorf("%w; this binary also rebuilds %q and %q runs, and runs whose record describes their workflow (recorded since %s). To replay your own workflows, build a rath binary whose main calls cli.Main with a Config.Setup that registers them (package github.com/gorath/rath/cmd/rath/cli), or call replay.Run from your program",
			err, runWorkflow, demo.Name, flow.SpecParam)
	case errors.As(err, &notRebuildable):
		return nil, fmt.Errorf("run %s (workflow %q) cannot be replayed or resumed by this binary: %w. Replay it with replay.Run from the program that ran it, or build a rath binary that registers %q (cli.Config.Setup)",
			runID, row.Workflow, notRebuildable, row.Workflow)
	case err != nil:
		return nil, err
	case live:
		return nil, fmt.Errorf("%w: run %s (workflow %q) was started by a program; resume it with replay.Resume from that program, or build a rath binary that registers %q (cli.Config.Setup)",
			flow.ErrNotRebuildable, runID, row.Workflow, row.Workflow)
	}
	return wf, nil
}

// agentFromParams builds the agent "rath run" runs, from its recorded
// parameters. Live, it resolves the provider from today's environment and
// config file (a resume keeps the vendor, model and sampling the run
// started with) and puts what it resolved in params under
// resolvedProviderParam: the caller records params with the run, so a
// replay needs nothing else. Not live (a replay), the provider is rebuilt
// from that record alone and refuses every call.
func (a *app) agentFromParams(ctx context.Context, rt *rath.Runtime, params map[string]string, live bool, onDelta func(model.Delta)) (*flow.Agent, error) {
	prov, err := a.providerFromParams(rt, params, live)
	if err != nil {
		return nil, err
	}
	opts := []flow.AgentOption{}
	sel, err := parseTools(params["tools"])
	if err != nil {
		return nil, err
	}
	var tools []flow.Tool
	if len(sel.builtins) > 0 {
		if tools, err = builtin.New(rt.Sandboxes(), sel.builtins...); err != nil {
			return nil, err
		}
	}
	// A replay answers tool calls from the log: MCP tools come from the
	// record, with their servers stopped.
	var mcpT []flow.Tool
	if live {
		mcpT, err = mcpTools(ctx, rt, params, sel)
	} else {
		mcpT, err = recordedMCPTools(params)
	}
	if err != nil {
		return nil, err
	}
	if tools = append(tools, mcpT...); len(tools) > 0 {
		opts = append(opts, flow.WithTools(tools...))
	}
	rules, err := flow.ParseApprovalRules(params["approvals"])
	if err != nil {
		return nil, err
	}
	gates, err := flow.ApprovalOptions(rules)
	if err != nil {
		return nil, err
	}
	opts = append(opts, gates...)
	// The rules a fleet worker imposed when the run started (recorded
	// with it): the run's own rules cannot loosen them.
	imposedRules, err := flow.ParseApprovalRules(params[fleet.ApprovalsParam])
	if err != nil {
		return nil, err
	}
	imposed, err := flow.ImposedApprovalOptions(imposedRules)
	if err != nil {
		return nil, err
	}
	opts = append(opts, imposed...)
	memOpts, err := memoryOptions(ctx, rt, params)
	if err != nil {
		return nil, err
	}
	opts = append(opts, memOpts...)
	if n, err := strconv.Atoi(params["max_rounds"]); err == nil && n > 0 {
		opts = append(opts, flow.WithMaxRounds(n))
	}
	if params["stream"] == "true" {
		if onDelta == nil {
			onDelta = func(model.Delta) {} // a replay streams as the run did, to nobody
		}
		opts = append(opts, flow.WithStreaming(onDelta))
	}
	return flow.NewAgent(params["system"], prov, opts...)
}

// providerFromParams returns the provider of a run from its parameters:
// live, resolved from today's environment and config (a resume keeps the
// vendor, model and sampling the run recorded), with what it resolved put
// in params; not live, rebuilt from the record alone.
func (a *app) providerFromParams(rt *rath.Runtime, params map[string]string, live bool) (*flow.Provider, error) {
	rec, recorded, err := recordedProvider(params)
	if err != nil {
		return nil, err
	}
	var prov *flow.Provider
	switch {
	case !live && recorded:
		prov = flow.FromRecord(rec, refuseClient{})
	case !live:
		// Not reached from workflowForRun, which fills in the record of a
		// run recorded before resolvedProviderParam.
		return nil, fmt.Errorf("%w: the run's parameters do not say which provider it used", flow.ErrProvider)
	default:
		pv := flow.Provider{Name: params["provider"], Vendor: params["kind"], Model: params["model"], Cassette: params["cassette"]}
		if recorded {
			// A resume: the calls it adds must be made as the record's were.
			pv.Name, pv.Vendor, pv.Model = rec.Name, rec.Vendor, rec.Model
			pv.Temperature, pv.TopP, pv.MaxTokens, pv.Seed = rec.Temperature, rec.TopP, rec.MaxTokens, rec.Seed
			pv.Retry, pv.Budget = rec.Retry, rec.Budget
		}
		if prov, err = rt.ResolveProvider(pv, flow.ResolveOptions{}); err != nil {
			return nil, err
		}
		// The key may have come from anywhere; it must not reach the log.
		rt.Secrets().Add("provider."+cmp.Or(prov.Name, prov.Vendor)+".api_key", prov.APIKey)
		b, err := json.Marshal(prov.Recordable())
		if err != nil {
			return nil, err
		}
		params[resolvedProviderParam] = string(b)
	}
	return prov, nil
}
