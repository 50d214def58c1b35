package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// refuse is the client of a rebuilt workflow under replay: every answer
// must come from the record.
var refuse = model.ClientFunc(func(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errors.New("a replay called the model")
})

type lookupArgs struct {
	ID string `json:"id" jsonschema:"the order id"`
}

// A run of built-in layers (a Router choosing between an agent with a Go
// tool and approval rules, and a Sequential of a Parallel fan-out and a
// Compressor) records its spec; the workflow rebuilt from that spec alone
// (no Go tool, refusing provider) replays the run event for event.
func TestSpec_RebuiltWorkflowReplaysTheRun(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	p := flow.Scripted(
		scripted.Entry{Agent: "root.selector", ToolCalls: []scripted.ToolCall{{Name: "choose_next", Arguments: `{"name":"clerk"}`}}},
		scripted.Entry{Agent: "root.clerk", ToolCalls: []scripted.ToolCall{{Name: "lookup", Arguments: `{"id":"A-1"}`}}},
		scripted.Entry{Agent: "root.clerk", Content: "A-1 shipped"},
		scripted.Entry{Agent: "root.selector", ToolCalls: []scripted.ToolCall{{Name: "choose_next", Arguments: `{"name":"panel"}`}}},
		scripted.Entry{Agent: "root.panel.fan.a", Content: "from a"},
		scripted.Entry{Agent: "root.panel.fan.b", Content: "from b"},
		scripted.Entry{Agent: "root.panel.squash", Content: "summary"},
		scripted.Entry{Agent: "root.selector", ToolCalls: []scripted.ToolCall{{Name: "choose_next", Arguments: `{"name":"none"}`}}},
	)
	lookup, err := flow.NewTool("lookup", "Look an order up.", func(_ context.Context, _ *session.Session, a lookupArgs) (string, error) {
		return "order " + a.ID + ": shipped", nil
	}, flow.WithParallelSafe())
	if err != nil {
		t.Fatal(err)
	}
	clerk, err := flow.NewAgent("You look orders up.", p, flow.WithTools(lookup), flow.WithMaxRounds(3),
		flow.WithApproval("write_*", flow.Always().WithDeadline(90e9, events.DecisionRejected)),
		flow.WithImposedApproval("delete_*", flow.Always()))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := flow.NewAgent("Say a.", p, flow.WithName("a"))
	b, _ := flow.NewAgent("Say b.", p, flow.WithName("b"), flow.WithStreaming(func(model.Delta) {}))
	comp := flow.NewCompressor(p, 1).SetName("squash")
	wf := flow.NewRouter(flow.NewSelector(p),
		flow.Candidate{Name: "clerk", Description: "looks orders up", Workflow: clerk},
		flow.Candidate{Name: "panel", Description: "asks a and b", Workflow: flow.NewSequential(flow.NewParallel(a, b).SetName("fan"), comp)},
	)
	in, err := rt.NewUserSession(ctx, "Where is A-1?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "desk", wf, in)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().ReadStream(ctx, run.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := evs[0].Decode()
	if err != nil {
		t.Fatal(err)
	}
	var spec flow.Spec
	if err := json.Unmarshal([]byte(payload.(*events.RunStarted).Params[flow.SpecParam]), &spec); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := spec.Rebuild(flow.RebuildOptions{Client: refuse})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(flow.Describe(rebuilt))
	if want, _ := json.Marshal(spec); string(again) != string(want) {
		t.Fatalf("the rebuilt workflow describes differently:\n got %s\nwant %s", again, want)
	}
	rep, err := replay.Run(ctx, rt, run.ID, rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Matched != rep.Recorded {
		t.Fatalf("replay of the rebuilt workflow: %s: %v", rep.Verdict(), rep.Divergence)
	}
}

func TestSpec_CheckNamesTheLayerOfGoCode(t *testing.T) {
	p := flow.Scripted()
	plain, _ := flow.NewAgent("x", p, flow.WithName("plain"))
	gated, _ := flow.NewAgent("x", p, flow.WithName("gated"), flow.WithApproval("deploy", flow.When("risky", func(string, json.RawMessage) bool { return true })))
	fn := flow.Func(func(_ context.Context, s *session.Session) (*session.Session, error) { return s, nil })
	tests := []struct {
		name string
		wf   flow.Workflow
		want string // "" for rebuildable
	}{
		{"agent", plain, ""},
		{"sequential of built-ins", flow.NewSequential(plain, flow.NewCompressor(p, 0)), ""},
		{"func at the root", fn, "root: a Go workflow (flow.Func)"},
		{"func in a parallel", flow.NewSequential(plain, flow.NewParallel(plain, fn).SetName("fan")), "root.fan.branch1: a Go workflow (flow.Func)"},
		{"named func", flow.NewSequential(flow.Named("announce", fn)), "root.announce: a Go workflow (flow.Func)"},
		{"approval predicate", flow.NewSequential(gated), `root.gated: an agent whose approval policy for "deploy" is a Go predicate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := flow.Describe(tt.wf).Check()
			var nr *flow.NotRebuildableError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.want != "" && (!errors.As(err, &nr) || !errors.Is(err, flow.ErrNotRebuildable)):
				t.Fatalf("Check: %v, want a *NotRebuildableError", err)
			}
			if tt.want != "" && !startsWith(nr.Path+": "+nr.Reason, tt.want) {
				t.Fatalf("Check: %q, want it to start with %q", nr.Path+": "+nr.Reason, tt.want)
			}
		})
	}
}

func startsWith(s, prefix string) bool { return strings.HasPrefix(s, prefix) }

// A workflow as data: what rt.Start records, and what rath replay
// rebuilds from.
func ExampleDescribe() {
	p := flow.Scripted()
	a, _ := flow.NewAgent("Review for security.", p, flow.WithName("security"))
	b, _ := flow.NewAgent("Review for style.", p, flow.WithName("style"))
	lead, _ := flow.NewAgent("Decide.", p, flow.WithName("lead"))
	spec := flow.Describe(flow.NewSequential(flow.NewParallel(a, b).SetName("reviewers"), lead))
	fmt.Println(spec.Kind, spec.Steps[0].Kind, spec.Steps[0].Steps[1].Name, spec.Steps[1].Provider.Vendor)
	fmt.Println(spec.Check())

	custom := flow.Func(func(_ context.Context, s *session.Session) (*session.Session, error) { return s, nil })
	fmt.Println(flow.Describe(flow.NewSequential(lead, custom)).Check())
	// Output:
	// sequential parallel style scripted
	// <nil>
	// flow: the workflow cannot be rebuilt from its record: root.step1: a Go workflow (flow.Func), whose code is not in the log
}

// An operator's rules over a submitter's: a worker builds the agent a
// submission describes with the submission's own rules, and imposes its
// operator's, which the submission's cannot loosen (a "never" of the
// submission exempts nothing the operator's stop).
func ExampleImposedApprovalOptions() {
	submitted, _ := flow.ParseApprovalRules(`[{"tool":"run_shell_command","policy":"never"}]`)
	operator, _ := flow.ParseApprovalRules(`[{"tool":"run_shell_command","command_matches":"\\brm\\b"},{"tool":"github__*"}]`)
	own, _ := flow.ApprovalOptions(submitted)
	imposed, _ := flow.ImposedApprovalOptions(operator)
	agent, err := flow.NewAgent("You code.", flow.Scripted(), append(own, imposed...)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := flow.Describe(agent)
	fmt.Println("own:", spec.Approvals[0].Tool, spec.Approvals[0].Policy)
	for _, r := range spec.Imposed {
		when := "every call"
		if r.CommandMatches != "" {
			when = "a command matching " + r.CommandMatches
		}
		fmt.Println("imposed:", r.Tool, "-", when)
	}
	// Output:
	// own: run_shell_command never
	// imposed: run_shell_command - a command matching \brm\b
	// imposed: github__* - every call
}
