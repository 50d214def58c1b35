package eventlog_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Carry a record that only matters once the next one exists: it is
// written in that append's commit, ahead of it, and costs no commit of
// its own. The caller gets back only its own events.
func ExampleNewCarried() {
	ctx := context.Background()
	store, done := openExampleStore(ctx)
	defer done()

	placed := events.SessionPlaced{Session: "s-1", Backend: "local", Spec: "./work"}
	carried, err := eventlog.NewCarried(eventlog.Write{Stream: "s-1", Expected: eventlog.NoStream, Events: []events.Payload{placed}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written before the next append:", carried.Written())

	before := store.Stats().Commits
	own, err := store.In(eventlog.Scope{Carry: carried}).Append(ctx, "s-2", eventlog.NoStream, events.SessionPlaced{Session: "s-2", Backend: "local", Spec: "./other"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written with it:", carried.Written(), "- commits:", store.Stats().Commits-before, "- events returned:", len(own))

	for _, stream := range []string{"s-1", "s-2"} {
		evs, err := store.ReadStream(ctx, stream, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: seq %d %s\n", stream, evs[0].Seq, evs[0].Type)
	}
	// Output:
	// written before the next append: false
	// written with it: true - commits: 1 - events returned: 1
	// s-1: seq 1 session.placed
	// s-2: seq 2 session.placed
}
