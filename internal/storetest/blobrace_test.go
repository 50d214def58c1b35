package storetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// A writer inserts a blob only when it is missing, holding the chain lock.
// Another party (rath copy) can insert the same blob without that lock; if
// its transaction commits while the writer's insert waits on it, the
// writer's statement collides, and the commit is redone, not failed.
func TestPostgres_ABlobAnotherPartyInsertsMeanwhileIsNotAFailure(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, err := server.CreateDatabase(ctx, fmt.Sprintf("conf%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.OpenStore(t, storetest.Target{Dir: t.TempDir(), DSN: dsn})
	blob := []byte("an output two parties store at once")

	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `INSERT INTO blobs (hash, size, bytes) VALUES ($1, $2, $3)`, eventlog.BlobHash(blob), len(blob), blob); err != nil {
		t.Fatal(err)
	}
	put := make(chan error, 1)
	go func() {
		_, err := s.PutBlob(ctx, blob)
		put <- err
	}()
	// The writer's insert now waits for the other transaction to end.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-put:
			t.Fatalf("PutBlob returned (%v) before the other party's insert ended: the test shows nothing", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited on the other party's blob")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-put; err != nil {
		t.Fatalf("PutBlob after a colliding insert: %v", err)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM blobs WHERE hash = $1`, eventlog.BlobHash(blob)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d copies of the blob (%v), want 1", n, err)
	}
	if _, err := s.Append(ctx, "s", eventlog.NoStream, &events.SessionPlaced{Session: "s", Backend: "local", Spec: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}
