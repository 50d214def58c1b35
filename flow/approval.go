package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/oracle"
	"github.com/gorath/rath/internal/shellgate"
	"github.com/gorath/rath/session"
)

// ErrWaiting is matched by a *WaitingError.
var ErrWaiting = errors.New("flow: waiting for a person")

// WaitingError unwinds a workflow that needs a person: a tool call waits
// for approval, or a question for its answer. The requests are recorded
// (approval.requested); the run stays open, neither failed nor finished,
// and continues with replay.Resume once they are decided
// (approval.Decide).
type WaitingError struct {
	Requests []string // the request ids
}

func (e *WaitingError) Error() string {
	return fmt.Sprintf("flow: waiting for a person to decide %s", strings.Join(e.Requests, ", "))
}

// Is makes errors.Is(err, ErrWaiting) true.
func (e *WaitingError) Is(target error) bool { return target == ErrWaiting }

// ToolErrRejected is the error kind of a tool call a person rejected: the
// model reads the reason as the tool's result, and the loop goes on.
const ToolErrRejected = "rejected"

// ToolErrApprovalMismatch is the error kind of a call whose arguments are
// not the ones a decision approved: it does not run.
const ToolErrApprovalMismatch = "approval_mismatch"

// Policy says which calls of a tool need a person's approval.
type Policy struct {
	needs    func(tool string, args json.RawMessage) (reason string, need bool)
	deadline time.Duration
	fallback string
	// rule is the policy as data, for the constructors that have one
	// (not When): a run records it (Describe) so a replay rebuilds it.
	rule *ApprovalRule
}

// Always is the policy under which every call needs approval.
func Always() Policy {
	return Policy{needs: func(tool string, _ json.RawMessage) (string, bool) {
		return "every call of " + tool + " needs approval", true
	}, rule: &ApprovalRule{Policy: "always"}}
}

// Never is the policy under which no call needs approval: declared before
// a broader pattern, it exempts a tool.
func Never() Policy {
	return Policy{needs: func(string, json.RawMessage) (string, bool) { return "", false }, rule: &ApprovalRule{Policy: "never"}}
}

// When is the policy under which the calls for which pred is true need
// approval, for reason.
func When(reason string, pred func(tool string, args json.RawMessage) bool) Policy {
	return Policy{needs: func(tool string, args json.RawMessage) (string, bool) {
		if pred(tool, args) {
			return reason, true
		}
		return "", false
	}}
}

// CommandMatches is the policy under which a call whose "cmd" argument
// (run_shell_command's) matches the regular expression needs approval.
//
// The pattern is matched against the command as written and against each
// simple command as the shell will run it, quotes removed (r""m reads as
// rm), in every pipeline, list, subshell, function and sh -c string. A
// command holding what cannot be known before it runs — a command
// substitution, a variable or pattern as a command name, eval, source, an
// interpreter given code inline or on its input, find -exec or -delete,
// xargs — needs approval whatever the pattern: the gate fails closed.
// internal/shellgate's doc lists what it reads and what it cannot see.
func CommandMatches(pattern string) (Policy, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: approval pattern %q: %v", ErrTool, pattern, err)
	}
	return Policy{needs: func(_ string, args json.RawMessage) (string, bool) {
		var a struct {
			Cmd string `json:"cmd"`
		}
		// Arguments that do not decode are shown to a person rather than
		// let through.
		if json.Unmarshal(args, &a) != nil {
			return "the arguments do not decode (rule: the command matches " + pattern + ")", true
		}
		return commandNeeds(re, a.Cmd)
	}, rule: &ApprovalRule{CommandMatches: pattern}}, nil
}

// commandNeeds is CommandMatches' predicate, with the reason a person sees.
func commandNeeds(re *regexp.Regexp, cmd string) (string, bool) {
	why := "the command matches " + re.String()
	if re.MatchString(cmd) {
		return why, true
	}
	r := shellgate.Inspect(cmd)
	if len(r.Unknown) > 0 {
		return "the command cannot be checked before it runs (" + strings.Join(r.Unknown, "; ") +
			"), so it is asked whatever the rule (" + why + ")", true
	}
	for _, c := range r.Commands {
		if re.MatchString(c) {
			return why + " (as the shell reads it: " + c + ")", true
		}
	}
	return "", false
}

// WriteOutside is the policy under which a call whose "path" argument
// (the workspace file tools') lies outside dir, a workspace-relative
// directory, needs approval.
func WriteOutside(dir string) Policy {
	base := path.Clean("/" + filepath.ToSlash(dir))
	p := When("the path is outside "+dir, func(_ string, args json.RawMessage) bool {
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(args, &a) != nil {
			return true
		}
		p := path.Clean("/" + filepath.ToSlash(a.Path))
		return p != base && !strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/")
	})
	p.rule = &ApprovalRule{WriteOutside: dir}
	return p
}

// WithDeadline returns p whose requests carry a deadline d after they are
// made: a request still pending then is decided by decision
// (events.DecisionApproved or DecisionRejected), recorded as decided by
// events.DecidedByDeadline.
func (p Policy) WithDeadline(d time.Duration, decision string) Policy {
	p.deadline, p.fallback = d, decision
	if p.rule != nil {
		r := *p.rule
		r.Deadline, r.Default = d.String(), decision
		p.rule = &r
	}
	return p
}

type toolPolicy struct {
	pattern string // a tool name or a path.Match pattern (mcp servers: "github__*")
	policy  Policy
}

// WithApproval makes the agent ask a person before calls of the tools
// named by pattern (a name, or a path.Match pattern such as "github__*"
// for an MCP server's tools) that p says need it. The first declared
// pattern that matches a tool decides for it.
func WithApproval(pattern string, p Policy) AgentOption {
	return func(a *Agent) error {
		tp, err := newToolPolicy(pattern, p)
		if err != nil {
			return err
		}
		a.approvals = append(a.approvals, tp)
		return nil
	}
}

// WithImposedApproval is WithApproval for a policy the agent's own cannot
// loosen: the rules of whoever runs agents that someone else described,
// such as a fleet worker's operator, for runs whose own rules a submitter
// chose. Imposed policies are a first-match list of their own, consulted
// first: a call one of them stops is asked whatever the agent's own
// policies say (a Never among those exempts nothing), with the imposed
// policy's reason, deadline and default; a call they let through, or that
// none of them matches, is then judged by the agent's own policies.
func WithImposedApproval(pattern string, p Policy) AgentOption {
	return func(a *Agent) error {
		tp, err := newToolPolicy(pattern, p)
		if err != nil {
			return err
		}
		a.imposed = append(a.imposed, tp)
		return nil
	}
}

func newToolPolicy(pattern string, p Policy) (toolPolicy, error) {
	if _, err := path.Match(pattern, ""); err != nil || pattern == "" {
		return toolPolicy{}, fmt.Errorf("%w: approval pattern %q", ErrTool, pattern)
	}
	if p.needs == nil {
		return toolPolicy{}, fmt.Errorf("%w: approval policy for %q is empty (use Always, Never, When)", ErrTool, pattern)
	}
	switch p.fallback {
	case "", events.DecisionApproved, events.DecisionRejected:
	default:
		return toolPolicy{}, fmt.Errorf("%w: approval default %q is not approved or rejected", ErrTool, p.fallback)
	}
	return toolPolicy{pattern, p}, nil
}

// firstMatch is the policy of policies that decides for tool.
func firstMatch(policies []toolPolicy, tool string) (Policy, bool) {
	for _, tp := range policies {
		if ok, _ := path.Match(tp.pattern, tool); ok {
			return tp.policy, true
		}
	}
	return Policy{}, false
}

// needsApproval says whether a call needs a person, and under which
// policy: the imposed policies' verdict first, then the agent's own.
func (a *Agent) needsApproval(tool string, args json.RawMessage) (p Policy, reason string, need bool) {
	for _, list := range [][]toolPolicy{a.imposed, a.approvals} {
		if p, ok := firstMatch(list, tool); ok {
			if reason, need := p.needs(tool, args); need {
				return p, reason, true
			}
		}
	}
	return Policy{}, "", false
}

// gate asks for the approvals the round's calls need, before any runs: it
// returns the calls to run (edited arguments in place) and, per call, an
// outcome already settled by a decision (a rejection). If any request is
// undecided, nothing runs: a *WaitingError names them all.
func (a *Agent) gate(ctx context.Context, s *session.Session, agent string, calls []events.ToolCall) ([]events.ToolCall, []*toolOutcome, error) {
	if len(a.approvals) == 0 && len(a.imposed) == 0 {
		return calls, nil, nil
	}
	out := append([]events.ToolCall(nil), calls...)
	settled := make([]*toolOutcome, len(calls))
	var waiting []string
	for i, c := range calls {
		p, reason, need := a.needsApproval(c.Name, json.RawMessage(c.Arguments))
		if !need {
			continue
		}
		req := events.ApprovalRequested{ID: approval.RequestID(s.ID(), c.ID), Run: runID(s), Session: s.ID(), Agent: agent,
			CallID: c.ID, Kind: events.ApprovalTool, Tool: c.Name, Arguments: c.Arguments, ArgsHash: approval.ArgsHash(c.Arguments), Reason: reason}
		if p.deadline > 0 {
			now, err := approval.Now(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("flow: approval deadline: %w", err)
			}
			req.Deadline, req.Default = now.Add(p.deadline).UnixNano(), p.fallback
		}
		dec, err := request(ctx, s, req)
		if err != nil {
			return nil, nil, err
		}
		if dec == nil {
			waiting = append(waiting, req.ID)
			continue
		}
		switch {
		case dec.ArgsHash != req.ArgsHash:
			settled[i] = &toolOutcome{call: c, kind: ToolErrApprovalMismatch, err: fmt.Errorf("the decision on %s approved other arguments than these: not run", req.ID)}
		case dec.Decision == events.DecisionRejected:
			why := dec.Note
			if why == "" {
				why = "no reason given"
			}
			settled[i] = &toolOutcome{call: c, kind: ToolErrRejected, err: fmt.Errorf("a person (%s) rejected this call: %s", dec.By, why)}
		case dec.Decision != events.DecisionApproved:
			settled[i] = &toolOutcome{call: c, kind: ToolErrApprovalMismatch, err: fmt.Errorf("the decision on %s is %q, not an approval: not run", req.ID, dec.Decision)}
		case dec.EditedArguments != "":
			if approval.ArgsHash(dec.EditedArguments) != dec.EditedHash {
				settled[i] = &toolOutcome{call: c, kind: ToolErrApprovalMismatch, err: fmt.Errorf("the edited arguments of %s do not match their recorded hash: not run", req.ID)}
				break
			}
			out[i].Arguments = dec.EditedArguments // what runs is exactly what was approved
		}
	}
	if len(waiting) > 0 {
		return nil, nil, &WaitingError{Requests: waiting}
	}
	return out, settled, nil
}

// runID is the run s belongs to, "" outside one.
func runID(s *session.Session) string { return s.Run().ID }

// request records req (once: a resumed or replayed run records it again
// at the same place, which the record matches) and returns its decision,
// nil while nobody decided. Under replay the oracle answers from the
// record; live, the log is asked, and a request past its deadline gets
// its default decision recorded.
func request(ctx context.Context, s *session.Session, req events.ApprovalRequested) (*events.ApprovalDecided, error) {
	store := s.Manager().Store()
	if _, err := s.Manager().Appender().Append(ctx, events.ApprovalStream(req.ID), eventlog.NoStream, req); err != nil && !errors.Is(err, eventlog.ErrConflict) {
		return nil, fmt.Errorf("flow: record approval request %s: %w", req.ID, err)
	}
	if o := oracle.From(ctx); o != nil {
		ans, err := o.Approval(ctx, oracle.ApprovalCall{ID: req.ID, Session: req.Session, Agent: req.Agent, CallID: req.CallID})
		return ans.Decision, err
	}
	st, err := approval.Load(ctx, store, req.ID)
	if err != nil {
		return nil, err
	}
	if st.Decision != nil {
		return st.Decision, nil
	}
	now, err := approval.Now(ctx)
	if err != nil {
		return nil, fmt.Errorf("flow: approval deadline: %w", err)
	}
	return approval.Expire(ctx, store, req.ID, now)
}

// Question is what Ask asks a person.
type Question struct {
	// Text is the question.
	Text string
	// Schema is the JSON Schema the answer must match; nil accepts any
	// JSON value.
	Schema json.RawMessage
	// Deadline, if set, answers the question with Default once it passes
	// undecided.
	Deadline time.Duration
	Default  json.RawMessage
}

type callKey struct{}

// Ask asks a person a question from a tool's Call or a workflow step, and
// returns the answer (JSON that matched q.Schema). Until somebody answers
// (approval.Decide), it returns a *WaitingError, which the tool or step
// must return as it is: the run suspends, and when it continues the same
// Ask, asked again at the same place, returns the answer. A replay
// answers from the record.
func Ask(ctx context.Context, s *session.Session, q Question) (json.RawMessage, error) {
	if strings.TrimSpace(q.Text) == "" || s == nil {
		return nil, errors.New("flow: Ask needs a session and a question")
	}
	callID, _ := ctx.Value(callKey{}).(string)
	req := events.ApprovalRequested{ID: approval.RequestID(s.ID(), Path(ctx), callID, q.Text), Run: runID(s), Session: s.ID(), Agent: Path(ctx),
		CallID: callID, Kind: events.ApprovalQuestion, Question: q.Text}
	if len(q.Schema) > 0 {
		canon, err := events.CanonicalizeJSON(q.Schema)
		if err != nil {
			return nil, fmt.Errorf("flow: Ask: schema: %w", err)
		}
		if _, err := approval.Resolve(string(canon)); err != nil {
			return nil, fmt.Errorf("flow: Ask: %w", err)
		}
		req.Schema = string(canon)
	}
	if q.Deadline > 0 {
		def, err := approval.CheckAnswer(req.Schema, q.Default)
		if err != nil {
			return nil, fmt.Errorf("flow: Ask: default answer: %w", err)
		}
		now, err := approval.Now(ctx)
		if err != nil {
			return nil, fmt.Errorf("flow: Ask: deadline: %w", err)
		}
		req.Deadline, req.Default, req.DefaultAnswer = now.Add(q.Deadline).UnixNano(), events.DecisionAnswered, def
	}
	dec, err := request(ctx, s, req)
	if err != nil {
		return nil, err
	}
	if dec == nil {
		return nil, &WaitingError{Requests: []string{req.ID}}
	}
	if dec.Decision != events.DecisionAnswered {
		return nil, fmt.Errorf("flow: question %s was %s, not answered", req.ID, dec.Decision)
	}
	return json.RawMessage(dec.Answer), nil
}
