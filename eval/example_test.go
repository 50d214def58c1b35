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

// Record two runs, pin them in a dataset, score them, and check the scores
// against the log.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	for _, answer := range []string{"Paris.", "Lyon, I think."} {
		agent, _ := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: answer}))
		in, _ := rt.NewUserSession(ctx, "The capital of France?")
		if _, err := rt.Start(ctx, "capital", agent, in); err != nil {
			log.Fatal(err)
		}
	}
	ds, err := eval.CreateFromRuns(ctx, rt, "capitals", eval.RunSelection{Workflow: "capital"})
	if err != nil {
		log.Fatal(err)
	}
	contains, _ := eval.ParseSpec("contains:Paris", eval.SpecOptions{})
	res, err := eval.ScoreDataset(ctx, rt, ds, []eval.Scorer{contains}, eval.ScoreOptions{Experiment: "baseline"})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Scores {
		fmt.Printf("%s %v (%s), read %d event\n", s.Scorer, s.Value, s.Reason, len(s.Reads))
	}
	x, _ := eval.LoadExperiment(ctx, rt, "baseline")
	fmt.Printf("mean %.2f over %d items, model calls %d\n", x.Means[0].Mean, x.Means[0].Items, res.ModelCalls)
	rep, _ := eval.VerifyScores(ctx, rt)
	fmt.Println("scores verified:", rep.Scores, "failure:", rep.Failure)
	// Output:
	// contains:Paris 1 (the answer contains the text), read 1 event
	// contains:Paris 0 (the answer does not contain the text), read 1 event
	// mean 0.50 over 2 items, model calls 0
	// scores verified: 2 failure: <nil>
}
