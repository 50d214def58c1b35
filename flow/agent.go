package flow

import (
	"context"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// DefaultMaxRounds is an agent's round cap unless WithMaxRounds says
// otherwise.
const DefaultMaxRounds = 32

// AgentParam is an agent's parameters: its head (the system prompt and any
// fixed examples, sent before the session's chunks) and its provider.
type AgentParam struct {
	Head     []events.Chunk
	Provider *Provider
}

// Agent is a workflow that runs the session loop with a model and tools.
// It is safe for concurrent use on different sessions.
type Agent struct {
	name      string
	param     AgentParam
	tools     map[string]Tool
	order     []Tool
	maxRounds int
	onDelta   func(model.Delta)
	memory    []*memoryConfig
	approvals []toolPolicy
	imposed   []toolPolicy // WithImposedApproval: consulted first, not loosened by approvals
}

// AgentOption configures NewAgent.
type AgentOption func(*Agent) error

// WithTools gives the agent tools. Names must be unique.
func WithTools(tools ...Tool) AgentOption {
	return func(a *Agent) error {
		for _, t := range tools {
			if t == nil {
				return fmt.Errorf("%w: nil tool", ErrTool)
			}
			if _, dup := a.tools[t.Name()]; dup {
				return fmt.Errorf("%w: two tools named %q", ErrTool, t.Name())
			}
			a.tools[t.Name()] = t
			a.order = append(a.order, t)
		}
		return nil
	}
}

// WithMaxRounds sets the round cap (model calls per Forward).
func WithMaxRounds(n int) AgentOption {
	return func(a *Agent) error {
		if n <= 0 {
			return fmt.Errorf("flow: max rounds must be positive, got %d", n)
		}
		a.maxRounds = n
		return nil
	}
}

// WithStreaming streams the model's answers: deltas reach fn as they
// arrive; the assistant chunk is still appended once, whole.
func WithStreaming(fn func(model.Delta)) AgentOption {
	return func(a *Agent) error { a.onDelta = fn; return nil }
}

// WithName sets the agent's path segment.
func WithName(name string) AgentOption {
	return func(a *Agent) error { a.name = name; return nil }
}

// NewAgent returns an agent with a system prompt and a provider.
func NewAgent(prompt string, p *Provider, opts ...AgentOption) (*Agent, error) {
	var head []events.Chunk
	if prompt != "" {
		head = []events.Chunk{{Role: events.RoleSystem, Content: prompt}}
	}
	return NewAgentParam(AgentParam{Head: head, Provider: p}, opts...)
}

// NewAgentParam returns an agent from explicit parameters.
func NewAgentParam(param AgentParam, opts ...AgentOption) (*Agent, error) {
	if param.Provider == nil || param.Provider.state == nil {
		return nil, fmt.Errorf("%w: NewAgent needs a provider from ResolveProvider (or rath.NewProvider)", ErrProvider)
	}
	a := &Agent{param: param, tools: map[string]Tool{}, maxRounds: DefaultMaxRounds}
	for _, o := range opts {
		if err := o(a); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Name returns the agent's path segment ("" if unnamed).
func (a *Agent) Name() string { return a.name }

// Param returns the agent's parameters.
func (a *Agent) Param() AgentParam { return a.param }

func (a *Agent) recordsItself() bool { return true }

// Forward runs the session loop on s and returns the session with the
// agent's turns appended. Hitting the round cap returns that session and a
// *MaxRoundsError.
func (a *Agent) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return a.forwardAs(ctx, s, "")
}

func (a *Agent) forwardAs(ctx context.Context, s *session.Session, hint string) (*session.Session, error) {
	if hint == "" {
		hint = "agent"
	}
	in := s
	ctx, s, path, err := enter(ctx, s, a, hint)
	if err != nil {
		return nil, err
	}
	out, err := a.loop(ctx, s, path)
	return exit(ctx, path, in, out, err)
}

func (a *Agent) specs() []model.ToolSpec {
	specs := make([]model.ToolSpec, len(a.order))
	for i, t := range a.order {
		specs[i] = model.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()}
	}
	return specs
}

// sessionRecorder records provider events on the session's own stream and
// keeps the handle current.
func sessionRecorder(s **session.Session) recorder {
	return func(ctx context.Context, blobs [][]byte, ev events.Payload) error {
		next, err := (*s).Emit(ctx, blobs, ev)
		if err != nil {
			return err
		}
		*s = next
		return nil
	}
}

func (a *Agent) loop(ctx context.Context, s *session.Session, path string) (*session.Session, error) {
	var err error
	if s, err = a.recall(ctx, s, path); err != nil {
		return s, err
	}
	specs := a.specs()
	var reqLog requestLog // the rounds' requests extend each other
	// The messages grow by the chunks each round appends, so they are
	// extended, not rebuilt: clients must not modify a request's messages.
	msgs := append([]model.Message(nil), a.param.Head...)
	seen := 0
	for round := 1; round <= a.maxRounds; round++ {
		msgs = s.AppendChunksFrom(msgs, seen)
		seen = s.Len()
		req := model.Request{Messages: msgs[:len(msgs):len(msgs)], Tools: specs}
		// The successful call's evidence is written together with the
		// assistant chunk: one commit instead of two per round.
		var pending session.Record
		rec := func(ctx context.Context, blobs [][]byte, ev events.Payload) error {
			if _, ok := ev.(events.ProviderCalled); ok {
				pending = session.Record{Blobs: blobs, Events: []events.Payload{ev}}
				return nil
			}
			return sessionRecorder(&s)(ctx, blobs, ev)
		}
		resp, err := a.param.Provider.call(ctx, s.ID(), path, req, a.onDelta, rec, &reqLog)
		if err != nil {
			return s, fmt.Errorf("flow: agent %s round %d: %w", path, round, err)
		}
		calls := resp.ToolCalls
		for i := range calls {
			if calls[i].ID == "" {
				// Some APIs omit ids; the loop needs one to pair results.
				calls[i].ID = fmt.Sprintf("call_%d_%d", round, i)
			}
		}
		pending.Chunks = []events.Chunk{{Role: events.RoleAssistant, Content: resp.Content, ToolCalls: calls, Author: path}}
		// The tool calls are recorded before they run, in the same commit.
		for _, c := range calls {
			pending.Events = append(pending.Events, events.ToolCalled{Session: s.ID(), Agent: path, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments, Backend: s.Placement().Backend})
		}
		if s, err = s.Record(ctx, pending); err != nil {
			return s, err
		}
		if len(calls) == 0 {
			return a.commit(ctx, s, path)
		}
		if s, err = a.runRound(ctx, s, path, calls); err != nil {
			return s, err
		}
	}
	s, err = s.Emit(ctx, nil, events.AgentCapped{Session: s.ID(), Agent: path, Rounds: a.maxRounds})
	if err != nil {
		return s, err
	}
	return s, &MaxRoundsError{Agent: path, Rounds: a.maxRounds}
}
