package projections_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
	"github.com/gorath/rath/projections"
)

// The projector runs inside every append's transaction, so the read model
// answers at once; a fork stores no copies of the chunks it shares.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-projections-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rath.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		log.Fatal(err)
	}
	db.Close()

	store, err := eventlog.Open(ctx, eventlog.Options{Path: path, Projectors: []eventlog.Projector{projections.Projector{}}})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	user := func(text string) events.Chunk { return events.Chunk{Role: events.RoleUser, Content: text} }
	if _, err := store.Append(ctx, "s-a", eventlog.NoStream,
		events.SessionCreated{Session: "s-a", Origin: "user", Chunks: []events.Chunk{user("plan the work")}},
		events.ChunkAppended{Session: "s-a", Index: 1, Chunk: user("step one")},
	); err != nil {
		log.Fatal(err)
	}
	if _, err := store.Append(ctx, "s-b", eventlog.NoStream,
		events.SessionForked{Session: "s-b", Source: "s-a", SourceVersion: 2, BaseLen: 2},
		events.ChunkAppended{Session: "s-b", Index: 2, Chunk: user("step two, on the fork")},
	); err != nil {
		log.Fatal(err)
	}

	r := projections.NewReader(store.DB())
	fork, err := r.Session(ctx, "s-b")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fork.ID, fork.Kind, "length", fork.Length, "shares", fork.BaseLen)
	chunks, err := r.Chunks(ctx, "s-b", fork.Length)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range chunks {
		fmt.Printf("%q stored in %s\n", c.Content, c.Home)
	}
	parents, err := r.Parents(ctx, "s-b")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("parent:", parents[0].Parent, parents[0].Kind)
	// Output:
	// s-b fork length 3 shares 2
	// "plan the work" stored in s-a
	// "step one" stored in s-a
	// "step two, on the fork" stored in s-b
	// parent: s-a fork
}
