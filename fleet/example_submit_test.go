package fleet_test

import (
	"context"
	"fmt"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
)

// A program that only submits opens the queue insert-only and writes a
// batch of runs, with their input sessions and jobs, in one transaction.
func ExampleFleet_SubmitBatch() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example-")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	fl, err := fleet.Open(ctx, rt, fleet.Options{SubmitOnly: true})
	if err != nil {
		panic(err)
	}
	defer fl.Close()
	var subs []fleet.Submission
	for _, prompt := range []string{"first task", "second task"} {
		input, err := rt.PrepareUserSession(ctx, prompt, "", "")
		if err != nil {
			panic(err)
		}
		subs = append(subs, fleet.Submission{Workflow: "my-workflow", Input: input})
	}
	runs, err := fl.SubmitBatch(ctx, subs)
	if err != nil {
		panic(err)
	}
	queued, _ := rt.Reader().Runs(ctx)
	fmt.Println(len(runs), "runs submitted;", len(queued), "in the store")
	fmt.Println(fl.Run(ctx, 0))
	// Output:
	// 2 runs submitted; 2 in the store
	// fleet: opened to submit only; it cannot work runs
}
