// Command 11_dynamic_selector lets the model choose the control flow: a
// flow.Selector is shown the conversation and a list of candidate
// workflows, and picks the next one to run, or none when the work is done.
// Each decision is a selector.decided event on a side stream, so the run
// replays with the same route.
//
// The candidates are a researcher, a writer and a critic; the loop asks the
// selector after each step, with a cap on the number of steps.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/11_dynamic_selector
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) routes and answers; -dir DIR keeps the database.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/examples/internal/exkit"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

//go:embed cassette.json
var cassette []byte

// maxSteps bounds the loop: a model that never says "none" must not run
// forever.
const maxSteps = 6

// team is the workflow: the selector picks among the agents until done.
type team struct {
	Research *flow.Agent
	Write    *flow.Agent
	Critique *flow.Agent
	Selector *flow.Selector
}

func (t *team) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	candidates := []flow.Candidate{
		{Name: "research", Description: "gathers the facts the task needs", Workflow: t.Research},
		{Name: "write", Description: "writes the text the user asked for", Workflow: t.Write},
		{Name: "critique", Description: "points out problems in a draft", Workflow: t.Critique},
	}
	for range maxSteps {
		next, err := t.Selector.Select(ctx, s, candidates...)
		if err != nil {
			return s, err
		}
		if next == flow.Empty {
			return s, nil
		}
		if s, err = flow.Forward(ctx, next, s); err != nil {
			return s, err
		}
	}
	return s, fmt.Errorf("no end after %d steps", maxSteps)
}

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := exkit.Open(ctx, *dir)
	defer cleanup()

	p, err := exkit.Provider(cassette, *live)
	exkit.Check(err)
	research, err := flow.NewAgent("You gather the facts a writer needs, briefly.", p)
	exkit.Check(err)
	write, err := flow.NewAgent("You write exactly what was asked, using the facts gathered.", p)
	exkit.Check(err)
	critique, err := flow.NewAgent("You point out the weak spots of the last draft.", p)
	exkit.Check(err)
	wf := &team{Research: research, Write: write, Critique: critique, Selector: flow.NewSelector(p)}

	task, err := rt.NewUserSession(ctx, "Write a haiku about how SQLite stores data.")
	exkit.Check(err)
	run, err := rt.Start(ctx, "haiku", wf, task, rath.WithSeed("selector"))
	exkit.Check(err)

	// The route the model chose, read back from the log.
	evs, err := rt.Store().Read(ctx, events.Query{RunID: run.ID, Types: []string{events.TypeSelectorDecided}})
	exkit.Check(err)
	for i, ev := range evs {
		payload, err := ev.Decode()
		exkit.Check(err)
		d := payload.(*events.SelectorDecided)
		chosen := d.Chosen
		if chosen == "" {
			chosen = "none"
		}
		fmt.Printf("decision %d: %-8s (%s) among %v\n", i+1, chosen, d.Reason, d.Candidates)
	}
	for _, c := range run.Output.Chunks() {
		if c.Role == events.RoleAssistant {
			fmt.Printf("%s:\n  %s\n", c.Author, indent(c.Content))
		}
	}

	rep, err := replay.Run(ctx, rt, run.ID, wf)
	exkit.Check(err)
	exkit.Verdict("replay", rep)
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
