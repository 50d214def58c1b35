package dossier

import (
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
)

// summaryText is how many runes of free text an event summary quotes.
const summaryText = 80

// summarize describes an event in one line for the event index.
func summarize(p events.Payload) string {
	switch e := p.(type) {
	case *events.ApprovalRequested:
		what := e.Tool + "(" + oneLine(e.Arguments, summaryText) + ")"
		if e.Kind == events.ApprovalQuestion {
			what = "question: " + oneLine(e.Question, summaryText)
		}
		return fmt.Sprintf("%s asks a person %s: %s", agentOr(e.Agent), e.ID, what)
	case *events.ApprovalDecided:
		return fmt.Sprintf("%s %s by %s", e.ID, e.Decision, oneLine(e.By, summaryText))
	case *events.RunStarted:
		return fmt.Sprintf("run %s of %s on %s", e.Run, e.Workflow, e.InputSession)
	case *events.RunFinished:
		s := fmt.Sprintf("run %s %s", e.Run, e.Status)
		if e.OutputSession != "" {
			s += " → " + e.OutputSession
		}
		if e.Error != "" {
			s += ": " + oneLine(e.Error, summaryText)
		}
		return s
	case *events.SessionCreated:
		return fmt.Sprintf("%s created (%s, %d chunks)", e.Session, e.Origin, len(e.Chunks))
	case *events.SessionForked:
		return fmt.Sprintf("%s forked from %s@%d", e.Session, e.Source, e.SourceVersion)
	case *events.SessionDetached:
		return fmt.Sprintf("%s detached from %s@%d", e.Session, e.Source, e.SourceVersion)
	case *events.SessionMerged:
		ids := make([]string, len(e.Parents))
		for i, p := range e.Parents {
			ids[i] = fmt.Sprintf("%s@%d", p.ID, p.Version)
		}
		return fmt.Sprintf("%s merged from %s (%s)", e.Session, strings.Join(ids, " + "), e.Strategy)
	case *events.SessionCompressed:
		return fmt.Sprintf("%s compressed from %s@%d (%d chunks)", e.Session, e.Source, e.SourceVersion, len(e.Chunks))
	case *events.SessionImported:
		return fmt.Sprintf("%s imported (%s)", e.Session, e.Format)
	case *events.SessionPlaced:
		return fmt.Sprintf("%s placed on %s %s", e.Session, e.Backend, e.Spec)
	case *events.ChunkAppended:
		c := e.Chunk
		s := fmt.Sprintf("%s[%d] %s", e.Session, e.Index, c.Role)
		if c.Author != "" {
			s += " by " + c.Author
		}
		if len(c.ToolCalls) > 0 {
			names := make([]string, len(c.ToolCalls))
			for i, tc := range c.ToolCalls {
				names[i] = tc.Name
			}
			s += " calls " + strings.Join(names, ", ")
		}
		if c.Content != "" {
			s += ": " + oneLine(c.Content, summaryText)
		}
		return s
	case *events.ProviderCalled:
		return fmt.Sprintf("%s called %s (attempt %d, %d tokens, %d ms)", agentOr(e.Agent), e.Model, e.Attempt, e.Usage.TotalTokens, e.LatencyMS)
	case *events.ProviderFailed:
		return fmt.Sprintf("%s call to %s failed: %s (attempt %d, retry %v)", agentOr(e.Agent), e.Model, e.ErrorKind, e.Attempt, e.WillRetry)
	case *events.WorkflowEntered:
		return fmt.Sprintf("enter %s on %s", e.Path, e.Session)
	case *events.WorkflowExited:
		s := fmt.Sprintf("exit %s: %s → %s", e.Path, e.InputSession, e.Session)
		if e.Error != "" {
			s += ": " + oneLine(e.Error, summaryText)
		}
		return s
	case *events.ToolCalled:
		return fmt.Sprintf("%s calls %s(%s)", agentOr(e.Agent), e.Tool, oneLine(e.Arguments, summaryText))
	case *events.ToolReturned:
		s := fmt.Sprintf("%s returned %d bytes in %d ms", e.Tool, e.OutputSize, e.DurationMS)
		if e.ErrorKind != "" {
			s += ", error " + e.ErrorKind
		}
		if n := len(e.Files); n > 0 {
			s += fmt.Sprintf(", %d files changed", n)
		}
		return s
	case *events.SelectorDecided:
		chosen := e.Chosen
		if chosen == "" {
			chosen = "none"
		}
		return fmt.Sprintf("%s chose %s of [%s]", e.Path, chosen, strings.Join(e.Candidates, ", "))
	case *events.AgentCapped:
		return fmt.Sprintf("%s stopped at its cap of %d rounds", e.Agent, e.Rounds)
	case *events.MemoryRemembered:
		return fmt.Sprintf("remember %s in %s: %s", e.ID, e.Namespace, oneLine(e.Text, summaryText))
	case *events.MemoryForgotten:
		return fmt.Sprintf("forget %s in %s", e.ID, e.Namespace)
	case *events.MemoryRecalled:
		return fmt.Sprintf("recall %q in %s: %d hits", oneLine(e.Query, summaryText), e.Namespace, len(e.Hits))
	case *events.MemoryCommitted:
		return fmt.Sprintf("commit %s to %s: %d memories", e.Session, e.Namespace, len(e.IDs))
	}
	return p.EventType()
}

func agentOr(agent string) string {
	if agent == "" {
		return "(caller)"
	}
	return agent
}
