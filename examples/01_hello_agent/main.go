// Command 01_hello_agent is the smallest rath program: one agent answers one
// question in a recorded run, and a replay proves the run reproduces.
//
// It shows rath.Open, rt.NewUserSession, rath.NewProvider, flow.NewAgent,
// rt.Start (a run whose session ids derive from a fixed seed) and
// replay.Run (the run re-executed against its own record, event by event).
//
// Run it offline; the model turn comes from cassette.json, written by hand:
//
//	go run ./examples/01_hello_agent
//
// Run it against a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or a
// default provider in ~/.rath/config.json), and keep the database to look
// at it with the rath CLI (bin/rath --dir ./hello events):
//
//	go run ./examples/01_hello_agent -live -dir ./hello
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	p, err := provider(cassette, *live)
	check(err)
	agent, err := flow.NewAgent("You explain software ideas in one or two sentences.", p)
	check(err)

	question, err := rt.NewUserSession(ctx, "What is event sourcing, in one sentence?")
	check(err)
	// A run records everything the agent does; its seed fixes the ids.
	run, err := rt.Start(ctx, "hello", agent, question, rath.WithSeed("hello-agent"))
	check(err)

	last, _ := run.Output.Last()
	fmt.Printf("question: %s\nanswer:   %s\n", question.Chunk(0).Content, last.Content)
	fmt.Printf("session %s now holds %d chunks, %d tokens in %d model call(s)\n",
		run.Output.ID(), run.Output.Len(), run.Output.Usage().TotalTokens, run.Output.Usage().Calls)

	// The replay runs the same agent again, answered from the record: no
	// model call, and every event it writes must match the recorded one.
	rep, err := replay.Run(ctx, rt, run.ID, agent)
	check(err)
	verdict("replay", rep)
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
