package bundle_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// Write a run's attested bundle, then verify it as a stranger would
// (bundle.Open makes the checks of the bundle's standalone verifier).
func ExampleWrite() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "bundle-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, filepath.Join(dir, "store"))
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	run := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: "run-1", Seed: "s"}})
	run.Append(ctx, "run-1", 0, events.RunStarted{Run: "run-1", Workflow: "hello", Seed: "s"})
	run.Append(ctx, "run-1", 1, events.RunFinished{Run: "run-1", Status: "ok"})

	files, _ := signkey.Generate(filepath.Join(dir, "keys"), "log.example")
	key, _ := signkey.Load(files.Signer)
	res, err := bundle.Write(ctx, rt.Store(), "run-1", filepath.Join(dir, "run-1.bundle"), bundle.Options{Key: key})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Predicate.Events, "events, seqs", res.Predicate.FirstSeq, "to", res.Predicate.LastSeq, "in a tree of", res.Predicate.Checkpoint.Size)

	at, err := bundle.Open(filepath.Join(dir, "run-1.bundle"), key.VerifierKey())
	fmt.Println(err, at.Predicate.Run, at.Predicate.Status, at.Predicate.Replay.Verdict)
	// Output:
	// 2 events, seqs 1 to 2 in a tree of 2
	// <nil> run-1 ok not replayed
}
