package storetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// A group commit on PostgreSQL costs a fixed number of round trips,
// whatever its events and blobs: one pipeline with BEGIN, the chain lock,
// the check of the tail, the statement for the rows, the tree and the
// NOTIFY, and COMMIT, when its writer made the last commit (two when it
// must read the tail first). Counted on the wire (eventlog.Stats.RoundTrips).
func TestPostgres_RoundTripsPerCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := fmt.Sprintf("conf%d", dbs.Add(1))
	dsn, err := server.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.OpenStore(t, storetest.Target{Dir: t.TempDir(), DSN: dsn})
	big := strings.Repeat("x", 70<<10) // past the blob threshold
	appendOne := func(i int) {
		t.Helper()
		ps := []events.Payload{
			&events.SessionPlaced{Session: "s", Backend: "local", Spec: fmt.Sprint(i)},
			&events.SessionPlaced{Session: "s", Backend: "local", Spec: big + fmt.Sprint(i)},
			&events.SessionPlaced{Session: "s", Backend: "local", Spec: "c"},
		}
		if _, err := s.Append(ctx, "s", eventlog.AnyVersion, ps...); err != nil {
			t.Fatal(err)
		}
	}
	appendOne(0) // prepares the statements
	appendOne(1) // and the optimistic transaction's
	before := s.Stats()
	const n = 10
	for i := 2; i <= n+1; i++ {
		appendOne(i)
	}
	after := s.Stats()
	commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips
	if commits != n || after.Events-before.Events != 3*n {
		t.Fatalf("%d commits of %d events, want %d of %d", commits, after.Events-before.Events, n, 3*n)
	}
	if got, want := float64(trips)/float64(commits), 1.0; got > want {
		t.Fatalf("%.1f round trips per commit of 3 events and a blob, want at most %.0f", got, want)
	}
	var blobs int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM blobs`).Scan(&blobs); err != nil || blobs != n+2 {
		t.Fatalf("%d blobs (%v), want %d", blobs, err, n+2)
	}
}

// A transaction of the writer costs the round trips of its statements
// only. An append the writer can check against its caches is one round
// trip: its BEGIN and the chain lock go ahead of its rows and COMMIT, and
// the server numbers the rows (eventlog/sequencer.go). One that must read
// first (a stream it has not seen, a lease token it has not cached) reads
// them, without the lock, then sends that pipeline: two. An AppendTx, whose function needs a
// *sql.Tx, begins and commits through database/sql: four, and its
// function's statements. (Counted on the wire of the writer's connection;
// four and four before the BEGIN and the COMMIT were pipelined.)
func TestPostgres_AnAppendIsOneRoundTripOrTwo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := storetest.OpenStore(t, postgresTarget(t))
	placed := func(spec string) events.Payload {
		return &events.SessionPlaced{Session: "s", Backend: "local", Spec: spec}
	}
	// The first append reads the stream's head; the second prepares the
	// late transaction's statements.
	for i := range 2 {
		if _, err := s.Append(ctx, "s", int64(i), placed(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i < 7; i++ {
		before := s.Stats()
		if _, err := s.Append(ctx, "s", int64(i), placed(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		after := s.Stats()
		if commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips; commits != 1 || trips != 1 {
			t.Fatalf("append %d: %d commits, %d round trips; want 1 and 1", i+1, commits, trips)
		}
		if after.Late-before.Late != 1 {
			t.Fatalf("append %d: %d late commits, want 1", i+1, after.Late-before.Late)
		}
	}
	// A stream the writer has not seen and a run's lease token it has not
	// cached are read first, without the lock: still two. A stale
	// token is still refused, before anything is written.
	if err := s.DB().QueryRowContext(ctx, `INSERT INTO run_leases (run, worker, token, expires_at, seq) VALUES ('r1', 'w', 7, 0, 0), ('r2', 'w', 3, 0, 0) RETURNING 1`).Err(); err != nil {
		t.Fatal(err)
	}
	leased := func(run string, token int64) eventlog.Appender {
		return s.In(eventlog.Scope{Run: events.RunRef{ID: run}, Lease: &eventlog.Lease{Run: run, Token: token}})
	}
	for i, c := range []struct {
		a       eventlog.Appender
		stream  string
		counted bool
	}{
		{s.In(eventlog.Scope{}), "new-1", true},
		{leased("r1", 7), "new-2", false}, // prepares the read of the tokens
		{leased("r2", 3), "new-3", true},  // a token not cached
	} {
		before := s.Stats()
		if _, err := c.a.Append(ctx, c.stream, eventlog.NoStream, &events.SessionPlaced{Session: c.stream, Backend: "local"}); err != nil {
			t.Fatal(err)
		}
		after := s.Stats()
		if commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips; c.counted && (commits != 1 || trips != 2) {
			t.Fatalf("append %d to a new stream: %d commits, %d round trips; want 1 and 2", i, commits, trips)
		}
	}
	var fenced *eventlog.FencedError
	if _, err := leased("r1", 6).Append(ctx, "new-4", eventlog.NoStream, &events.SessionPlaced{Session: "new-4", Backend: "local"}); !errors.As(err, &fenced) || fenced.Current != 7 {
		t.Fatalf("an append with a stale lease token: %v, want a FencedError naming token 7", err)
	}

	// The first AppendTx prepares the rows' statement for database/sql's
	// path; the second is counted.
	for i := range 2 {
		before := s.Stats()
		_, err := s.AppendTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `SELECT 1`)
			return err
		}, eventlog.Write{Stream: "s", Expected: int64(7 + i), Events: []events.Payload{placed(fmt.Sprint("tx", i))}})
		if err != nil {
			t.Fatal(err)
		}
		after := s.Stats()
		if commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips; i == 1 && (commits != 1 || trips != 5) {
			t.Fatalf("AppendTx: %d commits, %d round trips; want 1 and 5 (BEGIN, the lock's pipeline, its function's statement, the rows, COMMIT)", commits, trips)
		}
	}
	// The log is whole: every append verifies.
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// deferredInsert is a projector whose row goes with the batch's event
// rows (Tx.ExecPipelined); a placement on backend "bad" makes an insert the
// table refuses, which the server reports only at the batch's flush.
type deferredInsert struct{}

func (deferredInsert) Project(_ context.Context, tx *eventlog.Tx, ev *events.Event, p events.Payload) error {
	sp, ok := p.(*events.SessionPlaced)
	if !ok {
		return nil
	}
	return tx.ExecPipelined(`INSERT INTO placements_seen (seq, backend) VALUES (?, ?)`, ev.Seq, sp.Backend)
}

// A deferred statement that fails fails its own request only: the batch
// is written again with every statement run where it was queued, and its
// batch-mates land with their rows.
func TestPostgres_AFailedDeferredStatementFailsItsRequestAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	if err := tg.Exec(t, `CREATE TABLE placements_seen (seq BIGINT PRIMARY KEY, backend TEXT NOT NULL CHECK (backend <> 'bad'))`); err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, Projectors: []eventlog.Projector{deferredInsert{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 120
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stream, backend := fmt.Sprintf("s%d", i), "good"
			if i%4 == 0 {
				backend = "bad"
			}
			_, errs[i] = s.Append(ctx, stream, eventlog.NoStream, &events.SessionPlaced{Session: stream, Backend: backend})
		})
	}
	wg.Wait()
	good := 0
	for i, err := range errs {
		if i%4 == 0 {
			if err == nil || !strings.Contains(err.Error(), "placements_seen_backend_check") {
				t.Fatalf("request %d: %v, want the table's check constraint", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("request %d failed with its batch-mate: %v", i, err)
		}
		good++
	}
	var rows int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM placements_seen p JOIN events e ON e.seq = p.seq`).Scan(&rows); err != nil || rows != good {
		t.Fatalf("%d rows of the deferred inserts match events (%v), want %d", rows, err, good)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != int64(good) {
		t.Fatalf("verify: %+v, %v; want %d events", rep, err, good)
	}
	// The failures and their batch-mates shared commits (120 appends at
	// once make few batches), or the test showed nothing.
	if st := s.Stats(); st.Commits >= n {
		t.Fatalf("%d commits for %d appends: no two shared a batch", st.Commits, n)
	}
}

// Appends that come while the writer waits for the chain lock (another
// process holds it) go into one batch, not a turn of the lock each: under
// contention each turn serves every append the process has queued by
// then. The first append's transaction may be on its way to the server
// (its pipeline waits for the lock there) before the others queue, so
// they take at most two commits.
func TestPostgres_AppendsQueuedDuringTheLockWaitShareItsCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := storetest.OpenStore(t, postgresTarget(t))
	if _, err := s.Append(ctx, "warm", eventlog.NoStream, &events.SessionPlaced{Session: "warm", Backend: "local"}); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	const n = 16
	errs := appendBehindTheLock(t, s, n, func(i int) error {
		stream := fmt.Sprintf("q%d", i)
		_, err := s.Append(ctx, stream, eventlog.NoStream, &events.SessionPlaced{Session: stream, Backend: "local"})
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if commits := s.Stats().Commits - before.Commits; commits > 2 {
		t.Fatalf("%d appends queued behind the lock took %d commits, want at most 2", n, commits)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != n+1 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// A commit looks its blobs and its runs' lease tokens up by key. Left to
// itself, the planner turned the blob insert's NOT EXISTS into a hash anti
// join that read the whole blobs table on every commit, and a generic plan
// of the tokens' run = ANY($1) read all of run_leases: it prefers that
// while a table is small or not yet analyzed, and the writer's cached plan
// kept it as the table grew. Counted by PostgreSQL's statistics of the
// writer's session, which it reports when it ends.
func TestPostgres_ACommitReadsNoWholeTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	// Hundreds of rows the planner has no statistics of, as in a young
	// store before autovacuum analyzed its tables.
	for _, q := range []string{
		`ALTER TABLE blobs SET (autovacuum_enabled = off)`,
		`ALTER TABLE run_leases SET (autovacuum_enabled = off)`,
		`INSERT INTO blobs (hash, size, bytes) SELECT 'old' || i, 1, '\x00' FROM generate_series(1, 600) AS i`,
		`INSERT INTO run_leases (run, worker, token, expires_at, seq) SELECT 'r' || i, 'w', 1, 0, 0 FROM generate_series(1, 600) AS i`,
	} {
		if err := tg.Exec(t, q); err != nil {
			t.Fatal(err)
		}
	}
	s := storetest.OpenStore(t, tg)
	for i := range 12 { // past the five custom plans before a cached generic one
		run := fmt.Sprint("r", i+1)
		held := s.In(eventlog.Scope{Run: events.RunRef{ID: run}, Lease: &eventlog.Lease{Run: run, Token: 1}})
		stream := fmt.Sprint("s", i)
		if _, err := held.AppendWrites(ctx, eventlog.Write{Stream: stream, Expected: eventlog.NoStream,
			Events: []events.Payload{&events.SessionPlaced{Session: stream, Backend: "local"}},
			Blobs:  [][]byte{fmt.Appendf(nil, "blob %d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", tg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitBackendsGone(t, db)
	for _, table := range []string{"blobs", "run_leases"} {
		var scans, read int64
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(seq_scan, 0), COALESCE(seq_tup_read, 0) FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&scans, &read); err != nil {
			t.Fatal(err)
		}
		if scans != 0 {
			t.Errorf("table %s was read whole %d times (%d rows) by 12 commits", table, scans, read)
		}
	}
}

// The writer's statements are planned once per connection, not at every
// call: the server had judged a custom plan for each call's arrays cheaper
// than the generic one for the batch's insert and the lock's prefetch
// reads, and planning the insert cost as much as running it. Read from the
// writer's own session (pg_prepared_statements), inside an AppendTx.
func TestPostgres_TheWritersStatementsAreNotReplanned(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := storetest.OpenStore(t, postgresTarget(t))
	if err := s.DB().QueryRowContext(ctx, `INSERT INTO run_leases (run, worker, token, expires_at, seq) SELECT 'r' || i, 'w', 1, 0, 0 FROM generate_series(1, 12) AS i RETURNING 1`).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 12; i++ { // past the five custom plans the server tries first
		run := fmt.Sprint("r", i)
		held := s.In(eventlog.Scope{Run: events.RunRef{ID: run}, Lease: &eventlog.Lease{Run: run, Token: 1}})
		stream := fmt.Sprint("s", i) // a new stream and an uncached token: both prefetched
		if _, err := held.AppendWrites(ctx, eventlog.Write{Stream: stream, Expected: eventlog.NoStream,
			Events: []events.Payload{&events.SessionPlaced{Session: stream, Backend: "local"}},
			Blobs:  [][]byte{fmt.Appendf(nil, "blob %d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	type plans struct {
		statement       string
		generic, custom int64
	}
	var got []plans
	if _, err := s.AppendTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
			WHERE (statement LIKE '%INSERT INTO blobs%' OR statement LIKE '%FROM unnest($1::text[])%') AND statement NOT LIKE '%pg_prepared_statements%'`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p plans
			if err := rows.Scan(&p.statement, &p.generic, &p.custom); err != nil {
				return err
			}
			got = append(got, p)
		}
		return rows.Err()
	}, eventlog.Write{Stream: "tx", Expected: eventlog.NoStream, Events: []events.Payload{&events.SessionPlaced{Session: "tx", Backend: "local"}}}); err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 {
		t.Fatalf("%d of the writer's array statements prepared, want the insert and the two prefetch reads: %+v", len(got), got)
	}
	for _, p := range got {
		if p.custom != 0 || p.generic < 12 {
			t.Errorf("%d custom and %d generic plans for %.60q, want none and one a call", p.custom, p.generic, p.statement)
		}
	}
}

// A lease taken by another process drops the cached token of its run only:
// dropping them all at every take anywhere in a fleet made a writer read
// tokens again for most requests with several workers. The run whose lease
// was taken is still fenced at once.
func TestPostgres_ALeaseTakenElsewhereDropsOnlyItsRunsToken(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	a, b := storetest.OpenStore(t, tg), storetest.OpenStore(t, tg)
	// No projector here: the test writes run_leases as the projection would.
	if err := a.DB().QueryRowContext(ctx, `INSERT INTO run_leases (run, worker, token, expires_at, seq) VALUES ('r1', 'a', 7, 0, 0), ('r2', 'a', 7, 0, 0) RETURNING 1`).Err(); err != nil {
		t.Fatal(err)
	}
	appendAs := func(run string, token int64) error {
		_, err := a.In(eventlog.Scope{Run: events.RunRef{ID: run}, Lease: &eventlog.Lease{Run: run, Token: token}}).Append(ctx, "s-"+run, eventlog.AnyVersion, &events.SessionPlaced{Session: "s-" + run, Backend: "local"})
		return err
	}
	for _, run := range []string{"r1", "r2", "r1", "r2"} { // the tokens cached, the statements prepared
		if err := appendAs(run, 7); err != nil {
			t.Fatal(err)
		}
	}
	take := func(run string, token int64) {
		t.Helper()
		if _, err := b.Append(ctx, events.LeaseStream(run), eventlog.AnyVersion, &events.RunLeased{Run: run, Worker: "b", Token: token, ExpiresAt: time.Now().Add(time.Minute).UnixNano()}); err != nil {
			t.Fatal(err)
		}
	}
	take("r3", 1)
	// Past the idle bound a writer begins the usual way, which reads
	// what the other process committed (eventlog/optimistic.go).
	time.Sleep(1100 * time.Millisecond)
	before := a.Stats()
	if err := appendAs("r1", 7); err != nil {
		t.Fatal(err)
	}
	if trips := a.Stats().RoundTrips - before.RoundTrips; trips != 2 {
		t.Fatalf("an append of r1 after another process took r3's lease: %d round trips, want 2 (r1's token still cached)", trips)
	}
	// Another process takes r2 over: a's next append of r2 with its old
	// token is refused, though a had it cached.
	if err := a.DB().QueryRowContext(ctx, `UPDATE run_leases SET worker = 'b', token = 8 WHERE run = 'r2' RETURNING 1`).Err(); err != nil {
		t.Fatal(err)
	}
	take("r2", 8)
	var fenced *eventlog.FencedError
	if err := appendAs("r2", 7); !errors.As(err, &fenced) || fenced.Current != 8 {
		t.Fatalf("an append with r2's token after another process took it over: %v, want a FencedError naming token 8", err)
	}
	if err := appendAs("r1", 7); err != nil {
		t.Fatalf("r1 is still a's: %v", err)
	}
}

// A model call's events on a session cost a commit's one round trip with
// the projections too: the session row's update (its length and token
// totals), whose answer only a refusal needs, goes with the batch's rows
// instead of waiting for a round trip of its own.
func TestPostgres_ASessionsUpdateSharesTheRowsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rt, err := rath.OpenWith(ctx, postgresTarget(t).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s, err := rt.NewUserSession(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	store := rt.Store()
	for i := int64(1); i <= 6; i++ {
		before := store.Stats()
		if _, err := store.Append(ctx, s.ID(), eventlog.AnyVersion,
			events.ProviderCalled{Session: s.ID(), Model: "m", Agent: "a", Usage: events.Usage{PromptTokens: 2, CompletionTokens: 1, TotalTokens: 3}},
			events.ChunkAppended{Session: s.ID(), Index: i, Chunk: events.Chunk{Role: "assistant", Content: fmt.Sprint("reply ", i)}}); err != nil {
			t.Fatal(err)
		}
		after := store.Stats()
		if commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips; i > 2 && (commits != 1 || trips != 1) {
			t.Fatalf("append %d: %d commits, %d round trips; want 1 and 1", i, commits, trips)
		}
	}
	var length, calls, total int64
	if err := store.DB().QueryRowContext(ctx, `SELECT length, calls, total_tokens FROM sessions WHERE id = $1`, s.ID()).Scan(&length, &calls, &total); err != nil {
		t.Fatal(err)
	}
	if length != 7 || calls != 6 || total != 18 {
		t.Fatalf("session row: length %d, calls %d, tokens %d; want 7, 6, 18", length, calls, total)
	}
}

// A rebuild's rows go in multi-row INSERTs and its session rows and id
// counters are written once, at its end (package projections): its round
// trips on the writer's connection are a few dozen however many events
// it replays, where one a row cost about one an event.
func TestPostgres_ARebuildWritesInBulk(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rt, err := rath.OpenWith(ctx, postgresTarget(t).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	n := storetest.AgentLog(t, rt, 240, 2)
	before := rt.Store().Stats()
	st, err := rt.Rebuild(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	trips := rt.Store().Stats().RoundTrips - before.RoundTrips
	if st.Events < n {
		t.Fatalf("rebuilt %d events, want the %d written", st.Events, n)
	}
	if limit := int64(60); trips > limit {
		t.Fatalf("rebuilding %d events took %d round trips on the writer's connection, want at most %d", st.Events, trips, limit)
	}
	t.Logf("%d events rebuilt in %d round trips", st.Events, trips)
}

// What the appends absorbed into a batch that waited for the chain lock
// look up (their new streams' heads, their runs' lease tokens) is read in
// one round trip, not one each while the lock is held, and a projector's
// query (the session a new one must not replace) goes in one round trip
// with the statements queued before it, not after them. Each of those
// round trips held up every other process's writer. Counted on the wire:
// at most four a commit (the batch's reads and the absorbed appends',
// both made before the lock, the pipeline that takes it, the rows with
// the COMMIT) and the one query a new session makes.
func TestPostgres_AbsorbedAppendsReadWhatTheyNeedInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rt, err := rath.OpenWith(ctx, postgresTarget(t).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := rt.Store()
	const n = 12
	if err := s.DB().QueryRowContext(ctx, `INSERT INTO run_leases (run, worker, token, expires_at, seq) SELECT 'r' || i, 'w', 1, 0, 0 FROM generate_series(0, $1) AS i RETURNING 1`, n).Err(); err != nil {
		t.Fatal(err)
	}
	created := func(id string) events.Payload { return events.SessionCreated{Session: id, Origin: "user"} }
	leased := func(run string, token int64) eventlog.Appender {
		return s.In(eventlog.Scope{Run: events.RunRef{ID: run}, Lease: &eventlog.Lease{Run: run, Token: token}})
	}
	// The writer's statements prepared, the lease read's among them.
	for i := range 2 {
		id := fmt.Sprint("warm", i)
		if _, err := leased(id, 1).Append(ctx, id, eventlog.NoStream, created(id)); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats()
	errs := appendBehindTheLock(t, s, n, func(i int) error {
		id, a := fmt.Sprint("q", i), s.In(eventlog.Scope{})
		if i%2 == 0 {
			a = leased(fmt.Sprint("r", i), 1)
		}
		_, err := a.Append(ctx, id, eventlog.NoStream, created(id))
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	after := s.Stats()
	commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips
	if limit := 4*commits + n; trips > limit {
		t.Fatalf("%d appends of new sessions, half of them fenced, queued behind the lock: %d round trips in %d commits, want at most %d", n, trips, commits, limit)
	}
	t.Logf("%d appends: %d commits, %d round trips", n, commits, trips)
	// A stale token is still refused.
	var fenced *eventlog.FencedError
	if _, err := leased("r1", 0).Append(ctx, "stale", eventlog.NoStream, created("stale")); !errors.As(err, &fenced) || fenced.Current != 1 {
		t.Fatalf("an append with a stale token: %v, want a FencedError naming token 1", err)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// appendBehindTheLock makes n appends (appendOne(i)) at once while the
// chain lock is held as another process would hold it, and releases it
// once the writer waits for it and the others are queued behind it.
func appendBehindTheLock(t *testing.T, s *eventlog.Store, n int, appendOne func(i int) error) []error {
	t.Helper()
	ctx := t.Context()
	holder, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var started, done sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		started.Add(1)
		done.Go(func() {
			started.Done()
			errs[i] = appendOne(i)
		})
	}
	started.Wait()
	// The writer took the first append and waits for the lock.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited for the chain lock")
		}
		var waiting int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The other callers are past started.Done and into Append, a few
	// microseconds from the queue; give them far more than that.
	time.Sleep(100 * time.Millisecond)
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	done.Wait()
	return errs
}
