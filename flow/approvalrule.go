package flow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gorath/rath/events"
)

// ApprovalRule is an approval policy as data: the config file's
// "approvals" list, `rath run --approve`, and the parameters a run records
// so a worker or a replay rebuilds the same agent.
type ApprovalRule struct {
	// Tool is a tool name or a path.Match pattern ("github__*").
	Tool string `json:"tool"`
	// Policy is "always" (the default) or "never"; CommandMatches or
	// WriteOutside narrow "always" to the calls they match.
	Policy         string `json:"policy,omitempty"`
	CommandMatches string `json:"command_matches,omitempty"`
	WriteOutside   string `json:"write_outside,omitempty"`
	// Deadline (a Go duration, like "30m") and Default (approved or
	// rejected) decide a request nobody decided in time.
	Deadline string `json:"deadline,omitempty"`
	Default  string `json:"default,omitempty"`
}

// Option returns the agent option the rule stands for.
func (r ApprovalRule) Option() (AgentOption, error) {
	p, err := r.policy()
	if err != nil {
		return nil, err
	}
	return WithApproval(r.Tool, p), nil
}

// Imposed returns the rule as an imposed policy (WithImposedApproval):
// one the agent's own rules cannot loosen.
func (r ApprovalRule) Imposed() (AgentOption, error) {
	p, err := r.policy()
	if err != nil {
		return nil, err
	}
	return WithImposedApproval(r.Tool, p), nil
}

func (r ApprovalRule) policy() (Policy, error) {
	var p Policy
	switch {
	case r.Policy == "never":
		p = Never()
	case r.Policy != "" && r.Policy != "always":
		return Policy{}, fmt.Errorf("%w: approval rule for %q: policy %q is not always or never", ErrTool, r.Tool, r.Policy)
	case r.CommandMatches != "" && r.WriteOutside != "":
		return Policy{}, fmt.Errorf("%w: approval rule for %q: command_matches and write_outside are two rules", ErrTool, r.Tool)
	case r.CommandMatches != "":
		var err error
		if p, err = CommandMatches(r.CommandMatches); err != nil {
			return Policy{}, err
		}
	case r.WriteOutside != "":
		p = WriteOutside(r.WriteOutside)
	default:
		p = Always()
	}
	if r.Deadline != "" || r.Default != "" {
		d, err := time.ParseDuration(r.Deadline)
		if err != nil || d <= 0 {
			return Policy{}, fmt.Errorf("%w: approval rule for %q: deadline %q is not a positive duration", ErrTool, r.Tool, r.Deadline)
		}
		if r.Default != events.DecisionApproved && r.Default != events.DecisionRejected {
			return Policy{}, fmt.Errorf("%w: approval rule for %q: a deadline needs a default, approved or rejected", ErrTool, r.Tool)
		}
		p = p.WithDeadline(d, r.Default)
	}
	return p, nil
}

// ApprovalOptions turns rules, in order, into agent options.
func ApprovalOptions(rules []ApprovalRule) ([]AgentOption, error) {
	return ruleOptions(rules, ApprovalRule.Option)
}

// ImposedApprovalOptions turns rules, in order, into imposed policies
// (WithImposedApproval).
func ImposedApprovalOptions(rules []ApprovalRule) ([]AgentOption, error) {
	return ruleOptions(rules, ApprovalRule.Imposed)
}

func ruleOptions(rules []ApprovalRule, option func(ApprovalRule) (AgentOption, error)) ([]AgentOption, error) {
	opts := make([]AgentOption, 0, len(rules))
	for _, r := range rules {
		o, err := option(r)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// ParseApprovalRules reads rules from JSON (a run's recorded parameter).
func ParseApprovalRules(raw string) ([]ApprovalRule, error) {
	if raw == "" {
		return nil, nil
	}
	var rules []ApprovalRule
	if err := json.Unmarshal([]byte(raw), &rules); err != nil {
		return nil, fmt.Errorf("%w: approval rules: %v", ErrTool, err)
	}
	return rules, nil
}
