package eventlog_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// chunkCounter keeps a count of each session's chunks in a table of its
// own. Nothing it writes is read back in the transaction except by its own
// later statements, so its statements are pipelined: on PostgreSQL each
// goes with the transaction's next statement instead of costing a round
// trip of its own (elsewhere it runs at once).
type chunkCounter struct{}

func (chunkCounter) Project(_ context.Context, tx *eventlog.Tx, ev *events.Event, p events.Payload) error {
	switch e := p.(type) {
	case *events.SessionCreated:
		return tx.ExecPipelined(`INSERT INTO chunk_counts (session, n) VALUES (?, 0)`, e.Session)
	case *events.ChunkAppended:
		// The session's row must be there: an UPDATE that changes no row
		// refuses the append, whether it ran at once or was queued.
		queued, res, err := tx.ExecPipelinedRequiringRow(`UPDATE chunk_counts SET n = n + 1 WHERE session = ?`, e.Session)
		if err != nil || queued {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("chunk for unknown session %q", e.Session)
		}
	}
	return nil
}

// A projector pipelines the statements whose answers it does not need.
func ExampleTx_ExecPipelined() {
	ctx := context.Background()
	store, done := openExampleStoreWith(ctx, eventlog.Options{Projectors: []eventlog.Projector{chunkCounter{}}},
		`CREATE TABLE chunk_counts (session TEXT PRIMARY KEY, n INTEGER NOT NULL)`)
	defer done()

	if _, err := store.Append(ctx, "s-1", eventlog.NoStream,
		events.SessionCreated{Session: "s-1", Origin: "user"},
		events.ChunkAppended{Session: "s-1", Index: 0, Chunk: events.Chunk{Role: events.RoleUser, Content: "hello"}},
		events.ChunkAppended{Session: "s-1", Index: 1, Chunk: events.Chunk{Role: events.RoleAssistant, Content: "hi"}},
	); err != nil {
		log.Fatal(err)
	}
	// A chunk of a session the projector never saw is refused, and nothing
	// of its append is stored.
	_, err := store.Append(ctx, "s-2", eventlog.NoStream, events.ChunkAppended{Session: "s-2", Index: 0, Chunk: events.Chunk{Role: events.RoleUser, Content: "?"}})
	fmt.Println("refused:", err != nil)

	var n int
	if err := store.DB().QueryRowContext(ctx, `SELECT n FROM chunk_counts WHERE session = 's-1'`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("chunks of s-1:", n, "events:", head.Seq)
	// Output:
	// refused: true
	// chunks of s-1: 2 events: 3
}
