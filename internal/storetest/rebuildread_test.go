package storetest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/projections"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// queryCounter counts the queries sent on a pool's connections.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// tracedStore opens a store on target, with the projector, whose read
// pool's queries tracer sees.
func tracedStore(t *testing.T, target storetest.Target, tracer pgx.QueryTracer, opts eventlog.Options) *eventlog.Store {
	t.Helper()
	cfg, err := eventlog.ParsePostgresDSN(target.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = tracer
	opts.DSN, opts.PostgresReadPool = target.DSN, stdlib.OpenDB(*cfg)
	opts.Projectors = []eventlog.Projector{projections.Projector{}}
	s, err := eventlog.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A rebuild reads the log in pages of one query each, and the payloads a
// page keeps in blobs in one more: not a query a payload. Counted on the
// store's read pool, over a log of two pages whose every chunk is kept in
// blobs.
func TestPostgres_ARebuildReadsTheLogInPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var reads queryCounter
	s := tracedStore(t, postgresTarget(t), &reads, eventlog.Options{BlobThreshold: 64})
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

// keyReads counts, of the queries sent on a pool's connections, those
// that read a subject's key and those that read one event's row.
type keyReads struct{ keys, rows atomic.Int64 }

func (c *keyReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	switch {
	case strings.Contains(d.SQL, "FROM subject_keys"):
		c.keys.Add(1)
	case strings.Contains(d.SQL, "FROM events WHERE seq ="):
		c.rows.Add(1)
	}
	return ctx
}

func (c *keyReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A rebuild of a sealed log reads each subject's key once, erased or
// not: the scan names the key each event was sealed under, so sealing a
// run's params again reads no row of its own, and content sealed under a
// destroyed key reads as erased without asking the key table each time.
// Counted on the store's read pool.
func TestPostgres_ARebuildOfSealedContentReadsEachKeyOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	target := postgresTarget(t)
	var reads keyReads
	kr := keyring.New(keyringtest.KEK(t), func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })
	s := tracedStore(t, target, &reads, eventlog.Options{Sealer: kr})
	const subjects, runs = 8, 10
	for u := range subjects {
		sctx := events.ContextWithSubject(ctx, fmt.Sprintf("user:u%d", u))
		for r := range runs {
			run := fmt.Sprintf("run-%d-%d", u, r)
			_, err := s.In(eventlog.Scope{Run: events.RunRef{ID: run, Seed: run}}).AppendWrites(sctx, eventlog.Write{Stream: run, Expected: eventlog.NoStream,
				Events: []events.Payload{events.RunStarted{Run: run, Workflow: "w", Seed: run, Params: map[string]string{"model": "m"}},
					events.RunFinished{Run: run, Status: "error", Error: "the user's own words"}}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// Half the subjects are erased: their keys' rows go.
	if err := target.Exec(t, `DELETE FROM subject_keys WHERE subject IN ('user:u0', 'user:u1', 'user:u2', 'user:u3')`); err != nil {
		t.Fatal(err)
	}
	kr.ForgetAll()
	keysBefore, rowsBefore := reads.keys.Load(), reads.rows.Load()
	st, err := projections.Rebuild(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, rows := reads.keys.Load()-keysBefore, reads.rows.Load()-rowsBefore
	if want := int64(subjects * runs * 2); st.Events != want {
		t.Fatalf("rebuilt %d events, want %d", st.Events, want)
	}
	if keys > subjects || rows > 0 {
		t.Fatalf("rebuilding %d runs of %d subjects (4 erased) read keys %d times and single events' rows %d times, want at most %d and 0",
			subjects*runs, subjects, keys, rows, subjects)
	}
	t.Logf("%d events of %d subjects rebuilt with %d reads of keys", st.Events, subjects, keys)
}
