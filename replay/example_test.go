package replay_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

// Record a run, then replay it: the same code, every answer from the log.
func ExampleRun() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	agent, _ := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}))
	input, _ := rt.NewUserSession(ctx, "Capital of France?")
	run, err := rt.Start(ctx, "geo", agent, input)
	if err != nil {
		log.Fatal(err)
	}

	// The cassette is used up: a replay that called the model would fail.
	rep, err := replay.Run(ctx, rt, run.ID, agent)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rep.OK(), rep.Matched == rep.Recorded)
	// Output:
	// true true
}
