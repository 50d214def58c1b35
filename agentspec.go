package rath

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/memory"
)

// AgentWorkflow is the name runs of the built-in agent are recorded
// under: `rath run`, `rath submit`, the console's submit. The runtime
// builds it from the run's parameters (AgentSpec), for a replay, a
// resume or a fleet worker, with no workflow registered.
const AgentWorkflow = "rath.run"

// Run parameters of the built-in agent: AgentSpec.Params writes them and
// ParseAgentSpec reads them. They are the record's format, read back by
// every later version of rath.
const (
	ParamSystem        = "system"
	ParamModel         = "model"
	ParamProvider      = "provider"
	ParamVendor        = "kind"
	ParamCassette      = "cassette"
	ParamTools         = "tools"
	ParamMCP           = "mcp"
	ParamMCPTools      = "mcp_tools"
	ParamMemory        = "memory"
	ParamMemoryBackend = "memory_backend"
	ParamApprovals     = "approvals"
	// ParamImposed holds the approval rules a fleet worker imposed when
	// the run started (fleet.Policy.Approvals): the run's own rules
	// cannot loosen them, and a replay and a resume rebuild the same gate.
	ParamImposed   = "worker_approvals"
	ParamMaxRounds = "max_rounds"
	ParamStream    = "stream"
	ParamWorkspace = "workspace"
	ParamBackend   = "backend"
	// ParamAgent names the config file's agent the system prompt came
	// from (`rath run --agent`): `rath regress` rebuilds such a run with
	// the file's prompt as it is then.
	ParamAgent = "agent"
)

// ErrAgentSpec is matched by an *AgentSpecError.
var ErrAgentSpec = errors.New("rath: the built-in agent's parameters do not check out")

// AgentSpecError is a parameter of the built-in agent (a run's recorded
// one, a submission's, a flag's) that does not parse or check: Param
// names it as the record does (ParamMaxRounds, ParamTools...).
type AgentSpecError struct {
	Param string
	Err   error
}

func (e *AgentSpecError) Error() string { return fmt.Sprintf("run parameter %s: %v", e.Param, e.Err) }
func (e *AgentSpecError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrAgentSpec) true.
func (e *AgentSpecError) Is(target error) bool { return target == ErrAgentSpec }

// ToolsAll selects every built-in tool and every MCP tool
// (AgentSpec.Tools).
const ToolsAll = "all"

// AgentSpec is the built-in agent as data: one flow.Agent with a system
// prompt, a provider, built-in and MCP tools, approval rules and memory.
// A run of it records Params; ParseAgentSpec reads them back, and
// Runtime.BuildAgent builds the agent, live or for a replay. The zero
// value is an agent with no tools on the provider the environment
// resolves. An AgentSpec is a value: copy it freely.
type AgentSpec struct {
	// System is the agent's system prompt; empty for none.
	System string
	// Provider is the model as it was asked for: Name (a provider of the
	// config file), Vendor, Model and Cassette; never a key. Empty fields
	// resolve from the environment and the config file.
	Provider flow.Provider
	// Resolved is the provider a live build resolved
	// (flow.Provider.Recordable: vendor, name, model, base URL,
	// sampling, retry, budget; never the key). A replay rebuilds the
	// provider from it alone; a resume calls the same vendor and model
	// with the same sampling. Nil before the run's first build.
	Resolved *flow.Provider
	// Tools selects the agent's tools: built-in names, SERVER.TOOL and
	// SERVER.* for MCP tools, or ToolsAll for every one. Nil means every
	// MCP tool and no built-in.
	Tools []string
	// MCP are the MCP servers the run brings (rath run --mcp), by name,
	// beside the config file's "mcp_servers"; they win on a name clash.
	MCP map[string]mcptool.Server
	// MCPTools are the specs of the MCP tools a live build gave the
	// agent: a replay offers the model the same tools with the servers
	// stopped. Nil before the run's first build.
	MCPTools []mcptool.Spec
	// Memory are the namespaces the agent recalls from before its first
	// turn and, unless RecallOnly, commits its session to at the end.
	Memory []MemoryUse
	// MemoryBackend is the memory backend those namespaces live on. Nil
	// means the local memory.
	MemoryBackend *memory.BackendConfig
	// Approvals are the run's own approval rules.
	Approvals []flow.ApprovalRule
	// Imposed are the approval rules a fleet worker imposed
	// (ParamImposed), consulted before Approvals.
	Imposed []flow.ApprovalRule
	// MaxRounds caps the agent loop. Zero means flow.DefaultMaxRounds.
	MaxRounds int
	// Stream makes the agent stream its model calls.
	Stream bool
	// Workspace is the directory (or sandbox spec) the run's input
	// session is placed on, on Backend; empty for none. The agent does
	// not place anything: the caller placed the input session, and a
	// fleet worker checks both against its policy.
	Workspace string
	Backend   string
	// Agent names the config file's agent System came from; empty for a
	// prompt given as is.
	Agent string
}

// MemoryUse is one namespace of AgentSpec.Memory.
type MemoryUse struct {
	Namespace  string `json:"namespace"`
	RecallOnly bool   `json:"recall_only,omitempty"`
}

// ParseAgentSpec reads the parameters a run of the built-in agent
// recorded (or a submission carries). Parameters it does not know are
// ignored; one it knows that does not parse is an error naming it.
func ParseAgentSpec(params map[string]string) (AgentSpec, error) {
	s := AgentSpec{
		System:    params[ParamSystem],
		Provider:  flow.Provider{Name: params[ParamProvider], Vendor: params[ParamVendor], Model: params[ParamModel], Cassette: params[ParamCassette]},
		Stream:    params[ParamStream] == "true",
		Workspace: params[ParamWorkspace],
		Backend:   params[ParamBackend],
		Agent:     params[ParamAgent],
	}
	if raw := params[flow.ProviderParam]; raw != "" {
		var p flow.Provider
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return s, fmt.Errorf("%w: the run's recorded provider: %w", flow.ErrProvider, err)
		}
		s.Resolved = &p
	}
	if raw := params[ParamTools]; raw != "" {
		for _, n := range strings.Split(raw, ",") {
			s.Tools = append(s.Tools, strings.TrimSpace(n))
		}
	}
	if raw := params[ParamMaxRounds]; raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return s, &AgentSpecError{Param: ParamMaxRounds, Err: err}
		}
		s.MaxRounds = n
	}
	for _, f := range []struct {
		key string
		v   any
	}{
		{ParamMCP, &s.MCP}, {ParamMCPTools, &s.MCPTools}, {ParamMemory, &s.Memory},
		{ParamMemoryBackend, &s.MemoryBackend},
	} {
		if raw := params[f.key]; raw != "" {
			if err := json.Unmarshal([]byte(raw), f.v); err != nil {
				return s, &AgentSpecError{Param: f.key, Err: err}
			}
		}
	}
	var err error
	if s.Approvals, err = flow.ParseApprovalRules(params[ParamApprovals]); err != nil {
		return s, &AgentSpecError{Param: ParamApprovals, Err: err}
	}
	if s.Imposed, err = flow.ParseApprovalRules(params[ParamImposed]); err != nil {
		return s, &AgentSpecError{Param: ParamImposed, Err: err}
	}
	return s, nil
}

// Check reports the first field of s that a build would refuse, as an
// *AgentSpecError naming its parameter: a negative round cap, a tool
// selection ParseTools refuses, an approval rule that does not compile,
// a memory namespace given twice. `rath run`, `rath submit`, the
// console's submit and a fleet worker check a spec with it before
// anything is recorded.
func (s AgentSpec) Check() error {
	if s.MaxRounds < 0 {
		return &AgentSpecError{Param: ParamMaxRounds, Err: fmt.Errorf("%d: want 0 (the default) or more", s.MaxRounds)}
	}
	if _, err := ParseTools(s.Tools); err != nil {
		return &AgentSpecError{Param: ParamTools, Err: err}
	}
	for _, rules := range []struct {
		param string
		rules []flow.ApprovalRule
	}{{ParamApprovals, s.Approvals}, {ParamImposed, s.Imposed}} {
		if _, err := flow.ApprovalOptions(rules.rules); err != nil {
			return &AgentSpecError{Param: rules.param, Err: err}
		}
	}
	seen := map[string]bool{}
	for _, m := range s.Memory {
		if m.Namespace == "" || seen[m.Namespace] {
			return &AgentSpecError{Param: ParamMemory, Err: fmt.Errorf("namespace %q: empty or given twice", m.Namespace)}
		}
		seen[m.Namespace] = true
	}
	return nil
}

// Params returns s as run parameters, the form ParseAgentSpec reads:
// what a run of the agent records (rath.WithParams) and a submission
// carries.
func (s AgentSpec) Params() map[string]string {
	p := map[string]string{
		ParamSystem: s.System, ParamModel: s.Provider.Model, ParamProvider: s.Provider.Name, ParamBackend: s.Backend,
		ParamMaxRounds: strconv.Itoa(s.MaxRounds), ParamStream: strconv.FormatBool(s.Stream),
	}
	set := func(key, v string) {
		if v != "" {
			p[key] = v
		}
	}
	set(ParamVendor, s.Provider.Vendor)
	set(ParamCassette, s.Provider.Cassette)
	set(ParamWorkspace, s.Workspace)
	set(ParamAgent, s.Agent)
	set(ParamTools, strings.Join(s.Tools, ","))
	setJSON := func(key string, v any, empty bool) {
		if empty {
			return
		}
		// These types marshal without error: plain structs, maps and
		// slices of them.
		b, _ := json.Marshal(v)
		p[key] = string(b)
	}
	setJSON(flow.ProviderParam, s.Resolved, s.Resolved == nil)
	setJSON(ParamMCP, s.MCP, len(s.MCP) == 0)
	setJSON(ParamMCPTools, s.MCPTools, len(s.MCPTools) == 0)
	setJSON(ParamMemory, s.Memory, len(s.Memory) == 0)
	setJSON(ParamMemoryBackend, s.MemoryBackend, s.MemoryBackend == nil)
	setJSON(ParamApprovals, s.Approvals, len(s.Approvals) == 0)
	setJSON(ParamImposed, s.Imposed, len(s.Imposed) == 0)
	return p
}

// ToolSelection is AgentSpec.Tools, checked and split.
type ToolSelection struct {
	// Builtins are the built-in tools' names.
	Builtins []string
	// MCP are the MCP tools by server: their names there, or "*" for all.
	MCP map[string][]string
	// AllMCP selects every MCP tool of every server.
	AllMCP bool
}

// ParseTools checks a tool selection (AgentSpec.Tools): built-in names,
// SERVER.TOOL, SERVER.* or ToolsAll. Nil selects every MCP tool and no
// built-in.
func ParseTools(names []string) (ToolSelection, error) {
	sel := ToolSelection{MCP: map[string][]string{}}
	switch {
	case len(names) == 0:
		sel.AllMCP = true
		return sel, nil
	case len(names) == 1 && names[0] == ToolsAll:
		sel.Builtins, sel.AllMCP = builtin.Names(), true
		return sel, nil
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if server, tool, ok := strings.Cut(n, "."); ok && server != "" && tool != "" {
			sel.MCP[server] = append(sel.MCP[server], tool)
			continue
		}
		if !slices.Contains(builtin.Names(), n) {
			return sel, fmt.Errorf("unknown tool %q (want %s, SERVER.TOOL or SERVER.* for MCP tools, or some of: %s)", n, ToolsAll, strings.Join(builtin.Names(), ", "))
		}
		sel.Builtins = append(sel.Builtins, n)
	}
	return sel, nil
}
