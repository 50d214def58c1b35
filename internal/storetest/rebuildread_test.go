package storetest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// queryCounter counts the queries sent on a pool's connections.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A rebuild reads the log in pages of one query each, and the payloads a
// page keeps in blobs in one more: not a query a payload. Counted on the
// store's read pool, over a log of two pages whose every chunk is kept in
// blobs.
func TestPostgres_ARebuildReadsTheLogInPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	target := postgresTarget(t)
	cfg, err := eventlog.ParsePostgresDSN(target.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var reads queryCounter
	cfg.Tracer = &reads
	s, err := eventlog.Open(ctx, eventlog.Options{DSN: target.DSN, PostgresReadPool: stdlib.OpenDB(*cfg),
		Projectors: []eventlog.Projector{projections.Projector{}}, BlobThreshold: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const sessions, chunks = 6, 500
	for i := range sessions {
		id := fmt.Sprint("s", i)
		evs := []events.Payload{&events.SessionCreated{Session: id, Origin: "user"}}
		for k := range chunks {
			evs = append(evs, &events.ChunkAppended{Session: id, Index: int64(k), Chunk: events.Chunk{Role: "assistant", Content: strings.Repeat("kept in blobs ", 8)}})
		}
		if _, err := s.Append(ctx, id, eventlog.NoStream, evs...); err != nil {
			t.Fatal(err)
		}
	}
	before := reads.n.Load()
	st, err := projections.Rebuild(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := reads.n.Load() - before
	if want := int64(sessions * (chunks + 1)); st.Events != want {
		t.Fatalf("rebuilt %d events, want %d", st.Events, want)
	}
	// Two pages of rows, two of blobs, and the redactions' shapes (a
	// third page, empty, if the log ended on a page's end).
	if limit := int64(6); n > limit {
		t.Fatalf("rebuilding %d events, %d of them kept in blobs, took %d queries on the read pool, want at most %d", st.Events, sessions*chunks, n, limit)
	}
	t.Logf("%d events rebuilt in %d queries on the read pool", st.Events, n)
}
