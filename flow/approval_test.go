package flow_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
)

func TestApprovalRule_Option(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule flow.ApprovalRule
		bad  string // a substring of the error; "" when valid
	}{
		{"always", flow.ApprovalRule{Tool: "run_shell_command"}, ""},
		{"never", flow.ApprovalRule{Tool: "read_*", Policy: "never"}, ""},
		{"command", flow.ApprovalRule{Tool: "run_shell_command", CommandMatches: `\brm\b`}, ""},
		{"outside", flow.ApprovalRule{Tool: "write_workspace_file", WriteOutside: "src"}, ""},
		{"deadline", flow.ApprovalRule{Tool: "x", Deadline: "30m", Default: events.DecisionRejected}, ""},
		{"unknown policy", flow.ApprovalRule{Tool: "x", Policy: "sometimes"}, "not always or never"},
		{"bad pattern", flow.ApprovalRule{Tool: "x", CommandMatches: "("}, "approval pattern"},
		{"two predicates", flow.ApprovalRule{Tool: "x", CommandMatches: "a", WriteOutside: "b"}, "two rules"},
		{"deadline without default", flow.ApprovalRule{Tool: "x", Deadline: "1h"}, "needs a default"},
		{"default without deadline", flow.ApprovalRule{Tool: "x", Default: events.DecisionApproved}, "positive duration"},
		{"answered default", flow.ApprovalRule{Tool: "x", Deadline: "1h", Default: events.DecisionAnswered}, "needs a default"},
		{"bad tool pattern", flow.ApprovalRule{Tool: "[x"}, "approval pattern"},
		{"no tool", flow.ApprovalRule{}, "approval pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt, err := tc.rule.Option()
			if err == nil {
				// Option checks the rule; the agent checks the pattern.
				_, err = flow.NewAgent("", flow.Scripted(scripted.Entry{Content: "ok"}), opt)
			}
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("valid rule refused: %v", err)
			case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
				t.Fatalf("got %v, want an error saying %q", err, tc.bad)
			case tc.bad != "" && !errors.Is(err, flow.ErrTool):
				t.Fatalf("%v does not match flow.ErrTool", err)
			}
		})
	}
}

func TestParseApprovalRules(t *testing.T) {
	rules, err := flow.ParseApprovalRules(`[{"tool":"a"},{"tool":"b","policy":"never"}]`)
	if err != nil || len(rules) != 2 || rules[1].Policy != "never" {
		t.Fatalf("%+v %v", rules, err)
	}
	if rules, err := flow.ParseApprovalRules(""); err != nil || rules != nil {
		t.Fatalf("empty: %+v %v", rules, err)
	}
	if _, err := flow.ParseApprovalRules(`{"tool":"a"}`); !errors.Is(err, flow.ErrTool) {
		t.Fatalf("not a list: %v", err)
	}
}
