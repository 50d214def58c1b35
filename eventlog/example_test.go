package eventlog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
	"golang.org/x/mod/sumdb/tlog"
)

// openExampleStore makes a migrated database in a temporary directory and
// opens the log on it. Programs usually get a store from rath.Open, which
// does both.
func openExampleStore(ctx context.Context) (*eventlog.Store, func()) {
	return openExampleStoreWith(ctx, eventlog.Options{}, "")
}

// openExampleStoreWith is openExampleStore with opts (its Path set here)
// and a statement run on the migrated database before the log opens.
func openExampleStoreWith(ctx context.Context, opts eventlog.Options, setup string) (*eventlog.Store, func()) {
	dir, err := os.MkdirTemp("", "rath-events-example-")
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, "rath.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		log.Fatal(err)
	}
	if setup != "" {
		if _, err := db.ExecContext(ctx, setup); err != nil {
			log.Fatal(err)
		}
	}
	db.Close()
	opts.Path = path
	store, err := eventlog.Open(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	return store, func() { store.Close(); os.RemoveAll(dir) }
}

// Append events to a stream with an expected version, read the stream back,
// and verify the hash chain.
func Example() {
	ctx := context.Background()
	store, done := openExampleStore(ctx)
	defer done()

	// NoStream: the stream must not exist yet. Both events commit together.
	_, err := store.Append(ctx, "s-1", eventlog.NoStream,
		events.SessionCreated{Session: "s-1", Origin: "user"},
		events.ChunkAppended{Session: "s-1", Index: 0, Chunk: events.Chunk{Role: events.RoleUser, Content: "hello"}},
	)
	if err != nil {
		log.Fatal(err)
	}

	// A writer holding a stale version gets a typed conflict, not an interleaving.
	_, err = store.Append(ctx, "s-1", 1, events.ChunkAppended{Session: "s-1", Index: 1, Chunk: events.Chunk{Role: events.RoleUser, Content: "late"}})
	var conflict *eventlog.ConflictError
	if errors.As(err, &conflict) {
		fmt.Printf("conflict: expected %d, stream at %d\n", conflict.Expected, conflict.Actual)
	}

	evs, err := store.ReadStream(ctx, "s-1", 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range evs {
		fmt.Println(ev.Seq, ev.Stream, ev.Version, ev.Type)
	}

	report, err := store.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verified:", report.OK(), report.Events, "events")
	// Output:
	// conflict: expected 1, stream at 2
	// 1 s-1 1 session.created
	// 2 s-1 2 chunk.appended
	// verified: true 2 events
}

// Decode turns a stored payload back into its catalogue struct, rejecting
// fields the struct does not have.
func ExampleDecode() {
	p, err := events.Decode(events.TypeChunkAppended, 1, []byte(`{"session":"s-1","index":0,"chunk":{"role":"user","content":"hi"}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.(*events.ChunkAppended).Chunk.Content)

	_, err = events.Decode(events.TypeChunkAppended, 1, []byte(`{"session":"s-1","index":0,"chunk":{"role":"user"},"forged":true}`))
	fmt.Println(err != nil)
	// Output:
	// hi
	// true
}

// Outline a run's record before reading it: how many events, on which
// streams.
func ExampleStore_OutlineRun() {
	ctx := context.Background()
	store, done := openExampleStore(ctx)
	defer done()

	run := store.In(eventlog.Scope{Run: events.RunRef{ID: "run-1"}})
	for _, id := range []string{"s-1", "s-2"} {
		if _, err := run.Append(ctx, id, eventlog.NoStream, events.SessionCreated{Session: id, Origin: "user"}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := store.Append(ctx, "s-3", eventlog.NoStream, events.SessionCreated{Session: "s-3", Origin: "user"}); err != nil {
		log.Fatal(err)
	}
	outline, err := store.OutlineRun(ctx, "run-1", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outline.Events, outline.Streams)
	// Output: 2 [s-1 s-2]
}

// Prove that an event is in the log, and that the log grew without
// rewriting what an earlier tree head saw, with the checks of
// golang.org/x/mod/sumdb/tlog: anyone can run them with the leaf line,
// the proof and the heads, without the store.
func ExampleStore_ProveInclusion() {
	ctx := context.Background()
	store, done := openExampleStore(ctx)
	defer done()

	if _, err := store.Append(ctx, "s-1", eventlog.NoStream, events.SessionCreated{Session: "s-1", Origin: "user"}); err != nil {
		log.Fatal(err)
	}
	before, err := store.TreeHead(ctx) // kept by an auditor, say
	if err != nil {
		log.Fatal(err)
	}
	for i := range 4 {
		chunk := events.ChunkAppended{Session: "s-1", Index: int64(i), Chunk: events.Chunk{Role: events.RoleUser, Content: "hello"}}
		if _, err := store.Append(ctx, "s-1", int64(i+1), chunk); err != nil {
			log.Fatal(err)
		}
	}
	head, err := store.TreeHead(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// The event at seq 3 is leaf 2 of the tree.
	line, err := store.LeafLine(ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	inclusion, err := store.ProveInclusion(ctx, 3, head.Size)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("seq 3 included:", tlog.CheckRecord(inclusion, head.Size, head.Root, 2, tlog.RecordHash(line)) == nil)

	consistency, err := store.ProveConsistency(ctx, before.Size, head.Size)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tree of %d extends tree of %d: %v\n", head.Size, before.Size,
		tlog.CheckTree(consistency, head.Size, head.Root, before.Size, before.Root) == nil)
	// Output:
	// seq 3 included: true
	// tree of 5 extends tree of 1: true
}
