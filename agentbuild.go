package rath

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/memory"
)

// Mode says what a rebuilt workflow talks to.
type Mode int

const (
	// ReplayMode rebuilds a workflow for a replay (replay.Run): its
	// providers refuse every call (ErrReplayCalled) and its MCP tools are
	// the recorded specs with no server behind them; everything comes
	// from the record.
	ReplayMode Mode = iota
	// LiveMode rebuilds a workflow that goes on for real where the record
	// ends (replay.Resume, replay.ForkAt): providers resolved from today's
	// environment and config file, tools connected.
	LiveMode
)

func (m Mode) String() string {
	if m == LiveMode {
		return "live"
	}
	return "replay"
}

// AgentOptions tune Runtime.BuildAgent. The zero value builds for a
// replay.
type AgentOptions struct {
	// Mode is ReplayMode (the zero value) or LiveMode.
	Mode Mode
	// OnDelta, if set, gets a streaming agent's text as it arrives (a
	// terminal that prints it). Nil streams to nobody.
	OnDelta func(model.Delta)
}

// BuildAgent returns the built-in agent spec describes.
//
// In LiveMode its provider is resolved from today's environment and
// config file (with spec.Resolved set, a resume's, the vendor, model and
// sampling are the record's), its MCP servers are connected on the
// runtime's manager (Runtime.MCP; a server an earlier run connected is
// used again), and spec gets what the build resolved: Resolved and
// MCPTools. Record spec.Params() with the run and a replay needs nothing
// else. The provider's key is added to the runtime's secrets, so it
// never reaches the log.
//
// In ReplayMode the agent is rebuilt from the record alone: a provider
// from spec.Resolved that refuses every call (flow.ErrProvider without
// it), the recorded MCP tools. Built-in tools are built either way on the
// runtime's sandboxes; a replay answers their calls from the log.
func (rt *Runtime) BuildAgent(ctx context.Context, spec *AgentSpec, opts AgentOptions) (*flow.Agent, error) {
	prov, err := rt.AgentProvider(spec, opts.Mode)
	if err != nil {
		return nil, err
	}
	var agentOpts []flow.AgentOption
	tools, err := rt.AgentTools(ctx, spec, opts.Mode)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		agentOpts = append(agentOpts, flow.WithTools(tools...))
	}
	gates, err := flow.ApprovalOptions(spec.Approvals)
	if err != nil {
		return nil, err
	}
	imposed, err := flow.ImposedApprovalOptions(spec.Imposed)
	if err != nil {
		return nil, err
	}
	agentOpts = append(append(agentOpts, gates...), imposed...)
	if len(spec.Memory) > 0 {
		// In a replay the recalls and commits are answered from the
		// record; the memory is still opened, as the agent needs one.
		cfg := memory.BackendConfig{}
		if spec.MemoryBackend != nil {
			cfg = *spec.MemoryBackend
		}
		mem, err := rt.OpenMemory(ctx, cfg)
		if err != nil {
			return nil, err
		}
		for _, u := range spec.Memory {
			agentOpts = append(agentOpts, flow.WithMemory(mem, flow.MemoryOptions{Namespace: u.Namespace, Commit: !u.RecallOnly}))
		}
	}
	if spec.MaxRounds > 0 {
		agentOpts = append(agentOpts, flow.WithMaxRounds(spec.MaxRounds))
	}
	if spec.Stream {
		onDelta := opts.OnDelta
		if onDelta == nil {
			onDelta = func(model.Delta) {} // a replay streams as the run did, to nobody
		}
		agentOpts = append(agentOpts, flow.WithStreaming(onDelta))
	}
	return flow.NewAgent(spec.System, prov, agentOpts...)
}

// AgentProvider returns the provider of the built-in agent spec
// describes, as BuildAgent does: in LiveMode resolved today (the record's
// vendor, model and sampling when spec.Resolved is set), with spec.Resolved
// set to what it resolved; in ReplayMode rebuilt from spec.Resolved
// alone, refusing every call. A program's own workflow that records its
// provider the same way (ParamModel, flow.ProviderParam, …) can rebuild
// it with this too.
func (rt *Runtime) AgentProvider(spec *AgentSpec, mode Mode) (*flow.Provider, error) {
	if mode != LiveMode {
		if spec.Resolved == nil {
			return nil, fmt.Errorf("%w: the run's parameters do not say which provider it used", flow.ErrProvider)
		}
		return flow.FromRecord(*spec.Resolved, refuseClient{}), nil
	}
	pv := spec.Provider
	pv.Client, pv.APIKey = nil, ""
	if rec := spec.Resolved; rec != nil {
		// A resume: the calls it adds must be made as the record's were.
		pv.Name, pv.Vendor, pv.Model = rec.Name, rec.Vendor, rec.Model
		pv.Temperature, pv.TopP, pv.MaxTokens, pv.Seed = rec.Temperature, rec.TopP, rec.MaxTokens, rec.Seed
		pv.Retry, pv.Budget = rec.Retry, rec.Budget
	}
	prov, err := rt.ResolveProvider(pv, flow.ResolveOptions{})
	if err != nil {
		return nil, err
	}
	// The key may have come from anywhere; it must not reach the log.
	rt.Secrets().Add("provider."+cmp.Or(prov.Name, prov.Vendor)+".api_key", prov.APIKey)
	rec := prov.Recordable()
	spec.Resolved = &rec
	return prov, nil
}

// AgentTools returns the tools of the built-in agent spec describes, as
// BuildAgent gives them: its built-in tools, then its MCP tools. In
// LiveMode the MCP servers are connected (the config file's
// "mcp_servers", then spec.MCP, which win on a name clash) and
// spec.MCPTools gets the selected tools' specs; a submitter calls it
// before a worker runs the run, so the record has them and a server that
// cannot start fails there. In ReplayMode the MCP tools are
// spec.MCPTools, with no server behind them.
func (rt *Runtime) AgentTools(ctx context.Context, spec *AgentSpec, mode Mode) ([]flow.Tool, error) {
	sel, err := ParseTools(spec.Tools)
	if err != nil {
		return nil, err
	}
	var tools []flow.Tool
	if len(sel.Builtins) > 0 {
		if tools, err = builtin.New(rt.Sandboxes(), sel.Builtins...); err != nil {
			return nil, err
		}
	}
	if mode != LiveMode {
		return append(tools, mcptool.Recorded(spec.MCPTools)...), nil
	}
	mcpT, specs, err := rt.connectMCP(ctx, spec.MCP, sel)
	if err != nil {
		return nil, err
	}
	spec.MCPTools = specs
	return append(tools, mcpT...), nil
}

// AgentServers returns the MCP servers a run of the built-in agent may
// use: the config file's "mcp_servers", then those the run brings, which
// win on a name clash. The config entries that do not parse come back as
// an error beside the others; a nil map means the file itself is
// unreadable.
func AgentServers(brought map[string]mcptool.Server) (map[string]mcptool.Server, error) {
	servers, loadErr := mcptool.LoadServers("")
	if servers == nil {
		return nil, loadErr
	}
	maps.Copy(servers, brought)
	return servers, loadErr
}

// connectMCP connects the servers sel needs and returns the selected
// tools with their specs.
func (rt *Runtime) connectMCP(ctx context.Context, brought map[string]mcptool.Server, sel ToolSelection) ([]flow.Tool, []mcptool.Spec, error) {
	servers, loadErr := AgentServers(brought)
	if servers == nil || sel.AllMCP && loadErr != nil {
		return nil, nil, loadErr
	}
	names := slices.Sorted(maps.Keys(servers))
	if !sel.AllMCP {
		names = slices.Sorted(maps.Keys(sel.MCP))
		for _, n := range names {
			if _, ok := servers[n]; !ok {
				return nil, nil, errors.Join(fmt.Errorf("--tools: no MCP server %q (give it with --mcp %s=… or in %s)", n, n, flow.DefaultConfigPath(os.Getenv)), loadErr)
			}
		}
	}
	var out []flow.Tool
	var specs []mcptool.Spec
	for _, name := range names {
		srv := servers[name]
		for _, s := range srv.Secrets(name, os.Getenv) {
			rt.Secrets().Add(s.Name, s.Value)
		}
		// The runtime's manager outlives one run in a worker: a server
		// connected by an earlier run is used again.
		if err := rt.MCP().ConnectServer(ctx, name, srv); err != nil && !errors.Is(err, mcptool.ErrAlreadyConnected) {
			return nil, nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
		tools, err := rt.MCP().Tools(ctx, name)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
		want := sel.MCP[name]
		found := map[string]bool{}
		for _, t := range tools {
			spec, _ := mcptool.SpecOf(t)
			if sel.AllMCP || slices.Contains(want, "*") || slices.Contains(want, spec.Remote) {
				found[spec.Remote] = true
				out, specs = append(out, t), append(specs, spec)
			}
		}
		for _, w := range want {
			if w != "*" && !found[w] {
				return nil, nil, fmt.Errorf("--tools: MCP server %s has no tool %q", name, w)
			}
		}
	}
	return out, specs, nil
}

// withRecordedProvider returns spec with Resolved set. A run recorded
// before flow.ProviderParam existed gets one from its record: the
// provider label and model of its first model call (what its events
// say), over what today's environment and config resolve, if anything.
// Sampling settings and a retry policy that came from a config file are
// not in such a record: they are today's, or the defaults.
func (rt *Runtime) withRecordedProvider(ctx context.Context, runID string, spec *AgentSpec) error {
	if spec.Resolved != nil {
		return nil
	}
	base := spec.Provider
	if today, err := flow.ResolveProviderConfig(base, flow.ResolveOptions{Models: rt.models}); err == nil {
		base = today.Recordable()
	}
	evs, err := rt.store.Read(ctx, eventlog.Query{RunID: runID, Types: []string{events.TypeProviderCalled, events.TypeProviderFailed}, Limit: 1})
	if err != nil {
		return err
	}
	if len(evs) == 1 {
		p, err := evs[0].Decode()
		if err != nil {
			return err
		}
		var label, model string
		switch e := p.(type) {
		case *events.ProviderCalled:
			label, model = e.Provider, e.Model
		case *events.ProviderFailed:
			label, model = e.Provider, e.Model
		}
		// A call's provider label is the config name if there was one,
		// else the vendor.
		if spec.Provider.Name != "" {
			base.Name = label
		} else {
			base.Name, base.Vendor = "", label
		}
		base.Model = model
	}
	spec.Resolved = &base
	return nil
}
