package eval_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
)

// Record a run, change the agent's prompt, and check the run again: it
// differs at its first model request, which the record cannot answer.
func ExampleRegress() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	agent := func(prompt string) flow.Workflow {
		a, _ := flow.NewAgent(prompt, flow.Scripted(scripted.Entry{Content: "Paris."}))
		return a
	}
	input, _ := rt.NewUserSession(ctx, "Capital of France?")
	run, err := rt.Start(ctx, "geo", agent("Answer briefly."), input)
	if err != nil {
		log.Fatal(err)
	}
	cases := []eval.RegressCase{{Run: run.ID}}
	for _, prompt := range []string{"Answer briefly.", "Answer in one word."} {
		rep, err := eval.Regress(ctx, rt, cases, eval.RegressOptions{
			Workflow: func(context.Context, string) (flow.Workflow, error) { return agent(prompt), nil },
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(rep.Items[0].Verdict())
	}
	// Output:
	// same
	// diverged at seq 4: model request, wording; needs live answers
}
