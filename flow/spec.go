package flow

import (
	"encoding/json"
	"fmt"
	"reflect"

	"context"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/session"
)

// SpecParam is the run parameter under which rath.Runtime.Start records
// [Describe] of the run's workflow, as JSON: what a replay needs to
// rebuild the layer tree from the log alone ([Spec.Rebuild]).
const SpecParam = "workflow_spec"

// Spec kinds: the layers rath can rebuild from a record, and SpecGo for
// the ones it cannot.
const (
	SpecAgent      = "agent"
	SpecSequential = "sequential"
	SpecParallel   = "parallel"
	SpecCompressor = "compressor"
	SpecNamed      = "named"
	SpecRouter     = "router"
	SpecEmpty      = "empty"
	// SpecGo is a workflow of the program's own Go code (a struct with a
	// Forward method, a flow.Func): its behaviour is not in the log.
	SpecGo = "go"
)

// Spec describes a workflow as data: its layers, their names, models
// (as [Provider.Recordable]: never a key), tool specs, approval rules and
// memory. A Spec of built-in layers rebuilds into a workflow that a replay
// answers from the record; one holding Go code says where (Opaque).
type Spec struct {
	Kind string `json:"kind"`
	// Name is the path segment given to the layer (SetName, WithName,
	// Named); "" for none.
	Name string `json:"name,omitempty"`
	// Type is the layer's Go type, for SpecGo.
	Type string `json:"type,omitempty"`
	// Opaque, when set, is why the layer cannot be rebuilt from the log
	// (a Go workflow, an approval policy that is a Go predicate).
	Opaque string `json:"opaque,omitempty"`

	// Agents.
	Head      []events.Chunk `json:"head,omitempty"`
	Provider  *Provider      `json:"provider,omitempty"`
	Tools     []ToolSpec     `json:"tools,omitempty"`
	MaxRounds int            `json:"max_rounds,omitempty"`
	Stream    bool           `json:"stream,omitempty"`
	Approvals []ApprovalRule `json:"approvals,omitempty"`
	// Imposed are the agent's imposed approval rules
	// (WithImposedApproval), consulted before Approvals.
	Imposed []ApprovalRule `json:"imposed_approvals,omitempty"`
	Memory  []MemorySpec   `json:"memory,omitempty"`

	// Compressors (Provider too).
	Prompt   string `json:"prompt,omitempty"`
	KeepLast int    `json:"keep_last,omitempty"`

	// Routers: the selector's name (its Prompt and Provider above), the
	// candidates' names and descriptions (their workflows in Steps) and
	// the step cap.
	Selector   string          `json:"selector,omitempty"`
	Candidates []CandidateSpec `json:"candidates,omitempty"`
	MaxSteps   int             `json:"max_steps,omitempty"`

	// Steps are a Sequential's steps, a Parallel's branches, a Router's
	// candidates, the layer a Named wraps.
	Steps []Spec `json:"steps,omitempty"`
}

// CandidateSpec is a Router's candidate as the selector's model saw it.
type CandidateSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// ToolSpec is what an agent's model saw of a tool, and what the loop needs
// of it to replay its calls from the record.
type ToolSpec struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	ParallelSafe bool            `json:"parallel_safe,omitempty"`
	Annotations  ToolAnnotations `json:"annotations,omitzero"`
}

// MemorySpec is one WithMemory of an agent.
type MemorySpec struct {
	Namespace string    `json:"namespace,omitempty"`
	TopK      int       `json:"top_k,omitempty"`
	Commit    bool      `json:"commit,omitempty"`
	Extract   *Provider `json:"extract,omitempty"`
}

// Describe returns wf as data. Layers of the program's own Go code become
// SpecGo nodes naming their type: Describe cannot see inside them.
func Describe(wf Workflow) Spec {
	switch w := wf.(type) {
	case nil:
		return Spec{Kind: SpecGo, Opaque: "a nil workflow"}
	case empty:
		return Spec{Kind: SpecEmpty}
	case named:
		return Spec{Kind: SpecNamed, Name: w.name, Steps: []Spec{Describe(w.wf)}}
	case *Agent:
		return describeAgent(w)
	case *Sequential:
		return Spec{Kind: SpecSequential, Name: w.name, Steps: describeAll(w.Steps)}
	case *Parallel:
		return Spec{Kind: SpecParallel, Name: w.name, Steps: describeAll(w.Branches)}
	case *Compressor:
		return Spec{Kind: SpecCompressor, Name: w.name, Provider: recordable(w.Provider), Prompt: w.Prompt, KeepLast: w.KeepLast}
	case *Router:
		return describeRouter(w)
	}
	typ := reflect.TypeOf(wf).String()
	return Spec{Kind: SpecGo, Name: ownName(wf), Type: typ, Opaque: "a Go workflow (" + typ + "), whose code is not in the log"}
}

func describeAll(ws []Workflow) []Spec {
	out := make([]Spec, len(ws))
	for i, w := range ws {
		out[i] = Describe(w)
	}
	return out
}

func recordable(p *Provider) *Provider {
	if p == nil {
		return nil
	}
	r := p.Recordable()
	return &r
}

func describeRouter(r *Router) Spec {
	s := Spec{Kind: SpecRouter, Name: r.name, MaxSteps: r.MaxSteps}
	if r.Selector == nil {
		s.Opaque = "a router without a selector"
		return s
	}
	s.Selector, s.Prompt, s.Provider = r.Selector.name, r.Selector.Prompt, recordable(r.Selector.Provider)
	for _, c := range r.Candidates {
		s.Candidates = append(s.Candidates, CandidateSpec{Name: c.Name, Description: c.Description})
		s.Steps = append(s.Steps, Describe(c.Workflow))
	}
	return s
}

func describeAgent(a *Agent) Spec {
	s := Spec{Kind: SpecAgent, Name: a.name, Head: a.param.Head, Provider: recordable(a.param.Provider), MaxRounds: a.maxRounds, Stream: a.onDelta != nil}
	for _, t := range a.order {
		ps, _ := t.(ParallelSafe)
		s.Tools = append(s.Tools, ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema(),
			ParallelSafe: ps != nil && ps.ParallelSafe(), Annotations: AnnotationsOf(t)})
	}
	s.Approvals = describeRules(&s, a.approvals)
	s.Imposed = describeRules(&s, a.imposed)
	for _, m := range a.memory {
		s.Memory = append(s.Memory, MemorySpec{Namespace: m.opts.Namespace, TopK: m.opts.TopK, Commit: m.opts.Commit, Extract: recordable(m.opts.Extract)})
	}
	return s
}

// describeRules returns policies as rules; one that is a Go predicate
// makes s opaque.
func describeRules(s *Spec, policies []toolPolicy) []ApprovalRule {
	var rules []ApprovalRule
	for _, tp := range policies {
		if tp.policy.rule == nil {
			s.Opaque = fmt.Sprintf("an agent whose approval policy for %q is a Go predicate (flow.When)", tp.pattern)
			continue
		}
		r := *tp.policy.rule
		r.Tool = tp.pattern
		rules = append(rules, r)
	}
	return rules
}

// Check returns a *NotRebuildableError for the first layer of s that
// cannot be rebuilt from the log, or nil.
func (s Spec) Check() error { return s.check("root") }

func (s Spec) check(path string) error {
	if s.Opaque != "" || s.Kind == SpecGo {
		return &NotRebuildableError{Path: path, Reason: cmpOr(s.Opaque, "a Go workflow")}
	}
	switch s.Kind {
	case SpecAgent, SpecCompressor, SpecEmpty, SpecSequential, SpecParallel, SpecNamed:
	case SpecRouter:
		if len(s.Candidates) != len(s.Steps) {
			return &NotRebuildableError{Path: path, Reason: fmt.Sprintf("a router with %d candidates and %d workflows", len(s.Candidates), len(s.Steps))}
		}
	default:
		return &NotRebuildableError{Path: path, Reason: fmt.Sprintf("of kind %q, which this version of rath does not know", s.Kind)}
	}
	prefix := "step"
	if s.Kind == SpecParallel {
		prefix = "branch"
	}
	for i, c := range s.Steps {
		child := path
		if s.Kind == SpecRouter {
			child = path + "." + s.Candidates[i].Name // chosen, it runs Named after its candidate
		} else if s.Kind != SpecNamed {
			child = fmt.Sprintf("%s.%s", path, cmpOr(c.Name, fmt.Sprintf("%s%d", prefix, i)))
		}
		if err := c.check(child); err != nil {
			return err
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RebuildOptions says what a rebuilt workflow is wired to.
type RebuildOptions struct {
	// Client answers every rebuilt provider's calls. A replay answers
	// them from the record and never reaches it: give one that refuses.
	Client model.Client
	// Memory is the memory of agents that recalled or committed; nil is
	// an error for a Spec that has such an agent.
	Memory memory.Memory
}

// Rebuild returns the workflow s describes. Providers come from their
// record ([FromRecord]) answered by opts.Client; tools are the recorded
// specs, which a replay answers from the log and which fail if called
// (ErrRecordedTool). A Spec that fails Check is refused with its error.
func (s Spec) Rebuild(opts RebuildOptions) (Workflow, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s.rebuild(opts)
}

func (s Spec) rebuild(opts RebuildOptions) (Workflow, error) {
	steps := make([]Workflow, len(s.Steps))
	for i, c := range s.Steps {
		w, err := c.rebuild(opts)
		if err != nil {
			return nil, err
		}
		steps[i] = w
	}
	provider := func(p *Provider) (*Provider, error) {
		if p == nil {
			return nil, fmt.Errorf("%w: a %s without a provider", ErrNotRebuildable, s.Kind)
		}
		if opts.Client == nil {
			return nil, fmt.Errorf("%w: RebuildOptions.Client is nil", ErrProvider)
		}
		return FromRecord(*p, opts.Client), nil
	}
	switch s.Kind {
	case SpecEmpty:
		return Empty, nil
	case SpecNamed:
		if len(steps) != 1 {
			return nil, fmt.Errorf("%w: a named layer wraps %d layers", ErrNotRebuildable, len(steps))
		}
		return Named(s.Name, steps[0]), nil
	case SpecSequential:
		return NewSequential(steps...).SetName(s.Name), nil
	case SpecParallel:
		return NewParallel(steps...).SetName(s.Name), nil
	case SpecCompressor:
		p, err := provider(s.Provider)
		if err != nil {
			return nil, err
		}
		c := NewCompressor(p, s.KeepLast).SetName(s.Name)
		c.Prompt = s.Prompt
		return c, nil
	case SpecRouter:
		p, err := provider(s.Provider)
		if err != nil {
			return nil, err
		}
		sel := NewSelector(p).SetName(s.Selector)
		sel.Prompt = s.Prompt
		cands := make([]Candidate, len(steps))
		for i, w := range steps {
			cands[i] = Candidate{Name: s.Candidates[i].Name, Description: s.Candidates[i].Description, Workflow: w}
		}
		r := NewRouter(sel, cands...).SetName(s.Name)
		r.MaxSteps = s.MaxSteps
		return r, nil
	}
	p, err := provider(s.Provider)
	if err != nil {
		return nil, err
	}
	agentOpts := []AgentOption{WithName(s.Name)}
	if s.MaxRounds > 0 {
		agentOpts = append(agentOpts, WithMaxRounds(s.MaxRounds))
	}
	if s.Stream {
		// Streamed as recorded (the request says so), to nobody.
		agentOpts = append(agentOpts, WithStreaming(func(model.Delta) {}))
	}
	if len(s.Tools) > 0 {
		tools := make([]Tool, len(s.Tools))
		for i, t := range s.Tools {
			tools[i] = recordedTool{t}
		}
		agentOpts = append(agentOpts, WithTools(tools...))
	}
	gates, err := ApprovalOptions(s.Approvals)
	if err != nil {
		return nil, err
	}
	imposed, err := ImposedApprovalOptions(s.Imposed)
	if err != nil {
		return nil, err
	}
	agentOpts = append(append(agentOpts, gates...), imposed...)
	for _, m := range s.Memory {
		if opts.Memory == nil {
			return nil, fmt.Errorf("%w: agent %q uses memory and RebuildOptions.Memory is nil", ErrNotRebuildable, s.Name)
		}
		mo := MemoryOptions{Namespace: m.Namespace, TopK: m.TopK, Commit: m.Commit}
		if m.Extract != nil {
			if mo.Extract, err = provider(m.Extract); err != nil {
				return nil, err
			}
		}
		agentOpts = append(agentOpts, WithMemory(opts.Memory, mo))
	}
	return NewAgentParam(AgentParam{Head: s.Head, Provider: p}, agentOpts...)
}

// recordedTool is a tool as a Spec recorded it.
type recordedTool struct{ s ToolSpec }

func (t recordedTool) Name() string                 { return t.s.Name }
func (t recordedTool) Description() string          { return t.s.Description }
func (t recordedTool) Schema() json.RawMessage      { return t.s.Schema }
func (t recordedTool) ParallelSafe() bool           { return t.s.ParallelSafe }
func (t recordedTool) Annotations() ToolAnnotations { return t.s.Annotations }

func (t recordedTool) Call(context.Context, *session.Session, json.RawMessage) (ToolResult, error) {
	return ToolResult{}, &ToolError{Kind: ToolErrFailed, Err: ErrRecordedTool}
}
