package demo

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"

	"github.com/gorath/rath/flow/builtin"
)

// Name is the name the demo workflow is registered and recorded under.
const Name = "demo"

// Namespace is the memory namespace the demo's lessons go to.
const Namespace = "project/textkit"

// MaxAttempts bounds the patch attempts before the demo gives up.
const MaxAttempts = 3

// Prompts of the three agents and the router.
const (
	PlannerPrompt = "You are the planner. Read ISSUE.md in the workspace with read_workspace_file, then write a short numbered plan for the coder. Mention lessons from memory if any apply."
	CoderPrompt   = "You are the coder. Implement the plan in the workspace with write_workspace_file, run the tests with run_shell_command (python3 run_tests.py), and report what you changed. If a reviewer gave feedback, address it."
	ReviewPrompt  = "You are the reviewer. Read the code, add a test for an edge case the coder missed if you find one, run the tests, and answer starting with APPROVED or REJECTED, followed by the reason."
	RouterPrompt  = "You route the work on an issue. Choose code when there is no patch yet or the last review rejected it, review after a patch, and none once the reviewer approved."
	LessonsPrompt = "You keep the team's notes. Acknowledge the outcome in one sentence."
)

// Workflow is the demo: plan, then attempts routed by a Selector between
// coding and review; a rejected attempt is abandoned and a new one forked
// from the plan with the reviewer's feedback; finally the lessons are
// committed to memory. Its children are named after the fields.
type Workflow struct {
	Planner *flow.Agent
	Coder   *flow.Agent
	Review  *flow.Agent
	Lessons *flow.Agent
	Router  *flow.Selector
}

// New builds the demo workflow on a provider, with the built-in tools on
// pool and the memory mem.
func New(p *flow.Provider, pool *sandbox.Pool, mem memory.Memory) (*Workflow, error) {
	read, err := builtin.New(pool, "read_workspace_file", "list_workspace_files")
	if err != nil {
		return nil, err
	}
	all, err := builtin.New(pool, "read_workspace_file", "list_workspace_files", "write_workspace_file", "run_shell_command")
	if err != nil {
		return nil, err
	}
	planner, err := flow.NewAgent(PlannerPrompt, p, flow.WithTools(read...),
		flow.WithMemory(mem, flow.MemoryOptions{Namespace: Namespace, TopK: 3}))
	if err != nil {
		return nil, err
	}
	coder, err := flow.NewAgent(CoderPrompt, p, flow.WithTools(all...), flow.WithMaxRounds(12))
	if err != nil {
		return nil, err
	}
	review, err := flow.NewAgent(ReviewPrompt, p, flow.WithTools(all...), flow.WithMaxRounds(12))
	if err != nil {
		return nil, err
	}
	lessons, err := flow.NewAgent(LessonsPrompt, p,
		flow.WithMemory(mem, flow.MemoryOptions{Namespace: Namespace, TopK: -1, Commit: true, Extract: p}))
	if err != nil {
		return nil, err
	}
	router := flow.NewSelector(p).SetName("router")
	router.Prompt = RouterPrompt
	return &Workflow{Planner: planner, Coder: coder, Review: review, Lessons: lessons, Router: router}, nil
}

// Verdict words the reviewer starts its answer with.
const (
	Approved = "APPROVED"
	Rejected = "REJECTED"
)

// Forward runs the demo on a session holding the issue request and placed
// on the project's workspace.
func (w *Workflow) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	plan, err := flow.Forward(ctx, w.Planner, s)
	if err != nil {
		return plan, err
	}
	attempt, err := plan.Fork(ctx)
	if err != nil {
		return plan, err
	}
	candidates := []flow.Candidate{
		{Name: "code", Description: "the coder writes or fixes the patch and runs the tests", Workflow: w.Coder},
		{Name: "review", Description: "the reviewer checks the patch and approves or rejects it", Workflow: w.Review},
	}
	for attempts := 1; ; {
		next, err := w.Router.Select(ctx, attempt, candidates...)
		if err != nil {
			return attempt, err
		}
		if next == flow.Empty {
			break
		}
		if attempt, err = flow.Forward(ctx, next, attempt); err != nil {
			return attempt, err
		}
		verdict := lastAnswer(attempt)
		if !strings.HasPrefix(strings.TrimSpace(verdict), Rejected) {
			continue
		}
		if attempts++; attempts > MaxAttempts {
			return attempt, fmt.Errorf("demo: the patch was rejected %d times", MaxAttempts)
		}
		// Abandon the rejected attempt: fork a fresh one from the plan,
		// carrying the reviewer's feedback. The rejected branch stays in
		// the graph and the log.
		if attempt, err = plan.Fork(ctx); err != nil {
			return plan, err
		}
		attempt, err = attempt.Append(ctx, events.Chunk{Role: events.RoleUser, Content: "The reviewer rejected the previous patch: " + verdict})
		if err != nil {
			return attempt, err
		}
	}
	return flow.Forward(ctx, w.Lessons, attempt)
}

// lastAnswer is the content of the session's last assistant chunk.
func lastAnswer(s *session.Session) string {
	for i := s.Len() - 1; i >= 0; i-- {
		if c := s.Chunk(i); c.Role == events.RoleAssistant {
			return c.Content
		}
	}
	return ""
}
