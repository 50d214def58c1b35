package rath_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// The built-in agent as data: built live, run with its parameters
// recorded, then rebuilt from the record alone for a replay, as `rath
// replay`, the console and fleet workers rebuild it.
func ExampleAgentSpec() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	cassette := filepath.Join(dir, "cassette.json")
	os.WriteFile(cassette, []byte(`{"scripted": true, "responses": [{"content": "Paris."}]}`), 0o600)

	rt, err := rath.Open(ctx, filepath.Join(dir, "store"))
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	spec := rath.AgentSpec{
		System:    "Answer in one word.",
		Provider:  flow.Provider{Vendor: flow.VendorScripted, Cassette: cassette},
		MaxRounds: 4,
	}
	agent, err := rt.BuildAgent(ctx, &spec, rath.AgentOptions{Mode: rath.LiveMode})
	if err != nil {
		log.Fatal(err)
	}
	in, _ := rt.NewUserSession(ctx, "Capital of France?")
	// spec now holds what the build resolved: record it with the run.
	run, err := rt.Start(ctx, rath.AgentWorkflow, agent, in, rath.WithParams(spec.Params()))
	if err != nil {
		log.Fatal(err)
	}
	last, _ := run.Output.Last()
	fmt.Println("answer:", last.Content, "provider:", spec.Resolved.Vendor)

	wf, err := rt.RecordedWorkflow(ctx, run.ID, rath.ReplayMode)
	if err != nil {
		log.Fatal(err)
	}
	rep, err := replay.Run(ctx, rt, run.ID, wf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("replayed:", rep.OK(), rep.Matched == rep.Recorded)
	// Output:
	// answer: Paris. provider: scripted
	// replayed: true true
}
