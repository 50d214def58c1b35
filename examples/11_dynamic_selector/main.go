// Command 11_dynamic_selector lets the model choose the control flow: a
// flow.Selector is shown the conversation and a list of candidate
// workflows, and picks the next one to run, or none when the work is done.
// Each decision is a selector.decided event on a side stream, so the run
// replays with the same route.
//
// The candidates are a researcher, a writer and a critic; a flow.Router
// asks the selector after each step, with a cap on the number of steps.
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
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

// maxSteps bounds the routing: a model that never says "none" must not
// run forever.
const maxSteps = 6

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	p, err := provider(cassette, *live)
	check(err)
	research, err := flow.NewAgent("You gather the facts a writer needs, briefly.", p)
	check(err)
	write, err := flow.NewAgent("You write exactly what was asked, using the facts gathered.", p)
	check(err)
	critique, err := flow.NewAgent("You point out the weak spots of the last draft.", p)
	check(err)
	// A Router asks the selector after each step. It is data, not Go
	// code, so the run records it and the stock binary replays it:
	// rath --dir DIR replay RUN.
	wf := flow.NewRouter(flow.NewSelector(p),
		flow.Candidate{Name: "research", Description: "gathers the facts the task needs", Workflow: research},
		flow.Candidate{Name: "write", Description: "writes the text the user asked for", Workflow: write},
		flow.Candidate{Name: "critique", Description: "points out problems in a draft", Workflow: critique},
	)
	wf.MaxSteps = maxSteps

	task, err := rt.NewUserSession(ctx, "Write a haiku about how SQLite stores data.")
	check(err)
	run, err := rt.Start(ctx, "haiku", wf, task, rath.WithSeed("selector"))
	check(err)

	// The route the model chose, read back from the log.
	evs, err := rt.Store().Read(ctx, eventlog.Query{RunID: run.ID, Types: []string{events.TypeSelectorDecided}})
	check(err)
	for i, ev := range evs {
		payload, err := ev.Decode()
		check(err)
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
	check(err)
	verdict("replay", rep)
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

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
