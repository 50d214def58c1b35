// Command 14_human_in_the_loop puts a person in the loop of a recorded
// run: deploys to production need approval (flow.WithApproval with a
// predicate on the arguments), and a workflow step asks a question whose
// answer must match a JSON Schema (flow.Ask). Each time, the run
// suspends (flow.ErrWaiting, no run.finished), a person decides
// (approval.Decide: a rejection the model reads, an approval with edited
// arguments, an answer checked against the schema), and replay.Resume
// continues it. The replay at the end answers every decision from the
// record and asks nobody.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/14_human_in_the_loop
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) drives the agent instead; -dir DIR keeps the
// database, to look at it with `rath approvals`, `rath show` and
// `rath dossier`.
//
// The program is also a rath CLI that knows its workflow, to replay its
// runs from the store it kept:
//
//	go run ./examples/14_human_in_the_loop rath --dir DIR replay RUN
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/cmd/rath/cli"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

//go:embed cassette.json
var cassette []byte

type deployArgs struct {
	Env        string `json:"env" jsonschema:"staging or production"`
	Version    string `json:"version" jsonschema:"the version to deploy"`
	SkipChecks bool   `json:"skip_checks,omitempty" jsonschema:"skip the smoke checks"`
}

func deploy(_ context.Context, _ *session.Session, a deployArgs) (string, error) {
	return fmt.Sprintf("%s ok: %s deployed", a.Env, a.Version), nil
}

// production is true for a deploy to production: only those need a person.
func production(_ string, raw json.RawMessage) bool {
	var a deployArgs
	return json.Unmarshal(raw, &a) != nil || a.Env == "production"
}

// announce asks a person where to announce the release, then records it.
func announce(ctx context.Context, s *session.Session) (*session.Session, error) {
	ans, err := flow.Ask(ctx, s, flow.Question{
		Text:   "Which channel announces the release?",
		Schema: json.RawMessage(`{"type":"object","properties":{"channel":{"type":"string","pattern":"^#"}},"required":["channel"]}`),
	})
	if err != nil {
		return s, err // a *flow.WaitingError suspends the run
	}
	var a struct{ Channel string }
	if err := json.Unmarshal(ans, &a); err != nil {
		return s, err
	}
	return s.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "announce on " + a.Channel})
}

// release is the workflow: an agent whose production deploys need a
// person, then a step that asks where to announce.
func release(p *flow.Provider) flow.Workflow {
	tool, err := flow.NewTool("deploy", "Deploy a version to an environment.", deploy)
	check(err)
	agent, err := flow.NewAgent("You release software: staging first, then production.", p, flow.WithTools(tool),
		flow.WithApproval("deploy", flow.When("production deploys need a person", production)))
	check(err)
	return flow.NewSequential(flow.Named("release", agent), flow.Named("announce", flow.Func(announce)))
}

// workflowName is the name the runs record, and the CLI registers.
const workflowName = "release"

func main() {
	// The stock rath cannot replay this program's runs: the approval
	// policy and the announce step are Go code the log does not describe.
	// "rath ARGS" makes the program a rath CLI with the same workflow
	// registered, which can.
	if len(os.Args) > 1 && os.Args[1] == "rath" {
		os.Args = os.Args[1:]
		cli.Main(cli.Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
			p, err := provider(cassette, false) // a replay answers the model from the record
			if err != nil {
				return err
			}
			rt.Register(workflowName, release(p))
			return nil
		}})
	}

	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	p, err := provider(cassette, *live)
	check(err)
	wf := release(p)

	input, err := rt.NewUserSession(ctx, "Release 1.2.0.")
	check(err)
	run, err := rt.Start(ctx, workflowName, wf, input, rath.WithSeed("hitl"))

	// What a person does, from anywhere (here: rath approve / reject /
	// answer would do the same from another process).
	decisions := []func(id string){
		func(id string) {
			decide(ctx, rt, id, approval.Decision{Decision: events.DecisionRejected, By: "ops-lead", Note: "never skip the checks"})
		},
		func(id string) {
			decide(ctx, rt, id, approval.Decision{Decision: events.DecisionApproved, By: "ops-lead", Note: "ship the hotfix instead",
				EditedArguments: `{"env":"production","version":"1.2.1"}`})
		},
		func(id string) {
			_, err := approval.Decide(ctx, rt.Store(), id, approval.Decision{Decision: events.DecisionAnswered, By: "pm", Answer: json.RawMessage(`{"channel":"releases"}`)}, time.Now())
			fmt.Println("refused answer:", errors.Is(err, approval.ErrInvalid))
			decide(ctx, rt, id, approval.Decision{Decision: events.DecisionAnswered, By: "pm", Answer: json.RawMessage(`{"channel":"#releases"}`)})
		},
	}
	for _, next := range decisions {
		var waiting *flow.WaitingError
		if !errors.As(err, &waiting) {
			break
		}
		row, _ := rt.Reader().Run(ctx, run.ID)
		st, lerr := approval.Load(ctx, rt.Store(), waiting.Requests[0])
		check(lerr)
		q := st.Request
		if q.Kind == events.ApprovalQuestion {
			fmt.Printf("run %s; %s asks: %s\n", row.Status, q.Agent, q.Question)
		} else {
			fmt.Printf("run %s; %s asks to run: %s %s (%s)\n", row.Status, q.Agent, q.Tool, q.Arguments, q.Reason)
		}
		next(waiting.Requests[0])
		run, err = replay.Resume(ctx, rt, run.ID, wf)
	}
	check(err)

	for i, c := range run.Output.Chunks() {
		switch {
		case c.Role == events.RoleToolResult:
			fmt.Printf("  %s: %s\n", c.Name, c.Content)
		case c.Role == events.RoleAssistant && c.Content != "":
			fmt.Println("answer:", c.Content)
		case c.Role == events.RoleUser && i > 0:
			fmt.Println("step:", c.Content)
		}
	}
	row, _ := rt.Reader().Run(ctx, run.ID)
	fmt.Printf("run %s: %s\n", row.Status, run.ID)

	rep, err := replay.Run(ctx, rt, run.ID, wf)
	check(err)
	verdict("replay", rep)
}

func decide(ctx context.Context, rt *rath.Runtime, id string, d approval.Decision) {
	dec, err := approval.Decide(ctx, rt.Store(), id, d, time.Now())
	check(err)
	fmt.Printf("  %s %s by %s: %s%s\n", dec.ID, dec.Decision, dec.By, dec.Note, dec.Answer)
	if dec.EditedArguments != "" {
		fmt.Printf("  edited arguments: %s\n", dec.EditedArguments)
	}
}

// provider answers from the embedded cassette, or with -live from a real
// model (OPENAI_API_KEY, ANTHROPIC_API_KEY or ~/.rath/config.json).
func provider(cassette []byte, live bool) (*flow.Provider, error) {
	if live {
		return rath.NewProvider(flow.Provider{})
	}
	c, err := scripted.Parse(cassette)
	if err != nil {
		return nil, fmt.Errorf("parse cassette: %w", err)
	}
	return rath.NewProvider(flow.Provider{Vendor: flow.VendorScripted, Client: c, Model: "scripted"})
}

// openRuntime opens the runtime in dir, or in a temporary directory
// removed by the returned func when dir is empty.
func openRuntime(ctx context.Context, dir string) (*rath.Runtime, func()) {
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "rath-example-")
		check(err)
		dir, remove = filepath.Join(tmp, "store"), func() { os.RemoveAll(tmp) }
	}
	rt, err := rath.Open(ctx, dir)
	check(err)
	return rt, func() {
		check(rt.Close())
		remove()
	}
}

// verdict prints the replay's verdict and exits 1 if it diverged.
func verdict(label string, rep *replay.Report) {
	if !rep.OK() {
		fmt.Printf("%s: %d of %d events reproduced, then diverged:\n%v\n", label, rep.Matched, rep.Recorded, rep.Divergence)
		os.Exit(1)
	}
	fmt.Printf("%s: %d of %d events reproduced (100%%)\n", label, rep.Matched, rep.Recorded)
}

// check stops the program on an error, as an example's main may.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
