package replay_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

// Fork a recorded run at the model's answer, put another answer in its
// place, and continue: the new run records what it replaced.
func ExampleNewCounterfactual() {
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
	calls, _ := rt.Store().Read(ctx, eventlog.Query{RunID: run.ID, Types: []string{events.TypeProviderCalled}})

	cf, err := replay.NewCounterfactual(ctx, rt, run.ID, calls[0].Seq, replay.Replacement{Answer: &model.Response{Content: "Lyon."}})
	if err != nil {
		log.Fatal(err)
	}
	// The cassette is used up: the answer comes from the replacement.
	next, err := cf.Continue(ctx, rt, agent, false)
	if err != nil {
		log.Fatal(err)
	}
	last, _ := next.Output.Last()
	started, _ := rt.RunStarted(ctx, next.ID)
	fmt.Println(last.Content, started.ParentRun == run.ID, started.Params[replay.ReplacedParam] == calls[0].Hash)
	// Output:
	// Lyon. true true
}
