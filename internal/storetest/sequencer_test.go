package storetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// A transaction sequenced at its end (eventlog/sequencer.go) decides on
// the writer's caches, which another process's commits make stale, and
// checks what it decided on the server: a version conflict the stale
// cache saw is read again before it is returned (the append lands), an
// append at a stream head another process moved collides with that
// process's row and is written again once (at the next version), and a
// real conflict is still one. Every append is in the log once, gap-free.
func TestPostgres_ALateCommitChecksWhatItsCachesDecided(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	a, b := storetest.OpenStore(t, tg), storetest.OpenStore(t, tg)
	place := func(s *eventlog.Store, stream string, expected int64) ([]events.Event, error) {
		return s.Append(ctx, stream, expected, &events.SessionPlaced{Session: stream, Backend: "local"})
	}
	must := func(evs []events.Event, err error) []events.Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	for v := range int64(3) { // a's caches hold x at 3
		must(place(a, "x", v))
	}
	must(place(a, "y", eventlog.NoStream))

	// b moves x on; a's cache still has x at 3. a's append at x's real
	// version is refused by its cache, and the refusal is checked before
	// it is returned: the server's head is b's, and the append lands.
	must(place(b, "x", 3))
	if evs, err := place(a, "x", 4); err != nil || evs[0].Version != 5 {
		t.Fatalf("a's append to x at b's version: %v, %v; want version 5", evs, err)
	}

	// b moves y on; a's append to y at any version is numbered from a's
	// stale cache, collides with b's row, and is written again, once.
	must(place(b, "y", eventlog.AnyVersion))
	redone := a.Stats().Redone
	evs := must(place(a, "y", eventlog.AnyVersion))
	if evs[0].Version != 3 {
		t.Fatalf("a's append to y after b's landed at version %d, want 3", evs[0].Version)
	}
	if got := a.Stats().Redone - redone; got != 1 {
		t.Fatalf("a's append on a stale head was redone %d times, want 1", got)
	}
	tail, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != tail.Seq || evs[0].Hash != tail.Hash {
		t.Fatalf("a's append returned seq %d hash %s; the log ends at seq %d hash %s", evs[0].Seq, evs[0].Hash, tail.Seq, tail.Hash)
	}

	// A conflict a late commit finds is still one, and writes nothing.
	var conflict *eventlog.ConflictError
	if _, err := place(a, "y", 1); !errors.As(err, &conflict) || conflict.Actual != 3 {
		t.Fatalf("a stale append to y: %v, want a ConflictError at version 3", err)
	}

	// Every append is in the log once, gap-free, and the log verifies.
	all, err := a.Read(ctx, eventlog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"x": 5, "y": 3}
	got := map[string]int{}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a gap", i, ev.Seq)
		}
		got[ev.Stream]++
		if int64(got[ev.Stream]) != ev.Version {
			t.Fatalf("seq %d: %s version %d, want %d", ev.Seq, ev.Stream, ev.Version, got[ev.Stream])
		}
	}
	for stream, n := range want {
		if got[stream] != n {
			t.Fatalf("stream %s holds %d events, want %d", stream, got[stream], n)
		}
	}
	if a.Stats().Late == 0 {
		t.Fatal("a made no commit sequenced at its end")
	}
	storetest.MustVerify(t, a)
}

// A writer in the middle of its transaction (its projectors' reads sent,
// waiting on something of its own: a slow projector, a paused process)
// holds no lock another writer waits for: the chain lock is taken by the
// server when it runs the pipeline with the rows and the COMMIT. With the
// lock taken at BEGIN, b's append waited until the server ended a's
// stalled session (its idle-in-transaction timeout), and a's append
// failed.
func TestPostgres_AWriterMidTransactionStallsNoOtherWriter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	storetest.OpenStore(t, tg).Close() // migrated
	stall := &stallingProjector{entered: make(chan struct{}), release: make(chan struct{})}
	a, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, Projectors: []eventlog.Projector{stall}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := storetest.OpenStore(t, tg)
	for _, s := range []*eventlog.Store{a, b} { // both writers warm
		stream := "warm-" + fmt.Sprint(s == a)
		if _, err := s.Append(ctx, stream, eventlog.NoStream, &events.SessionPlaced{Session: stream, Backend: "local"}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Append(ctx, "stall", eventlog.NoStream, &events.SessionPlaced{Session: "stall", Backend: "local"})
		done <- err
	}()
	select {
	case <-stall.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("a's projector was never reached")
	}
	// a is inside its transaction. b appends meanwhile: with a lock held
	// across a's round trips, b waits until a is released (never, here).
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	evs, err := b.Append(bctx, "b", eventlog.NoStream, &events.SessionPlaced{Session: "b", Backend: "local"})
	if err != nil {
		close(stall.release)
		t.Fatalf("b's append while a is mid-transaction: %v, want it committed without waiting for a", err)
	}
	close(stall.release)
	if err := <-done; err != nil {
		t.Fatalf("a's append: %v", err)
	}
	got, err := b.ReadStream(ctx, "stall", 1)
	if err != nil || len(got) != 1 || got[0].Seq != evs[0].Seq+1 {
		t.Fatalf("a's event: %v %v, want it at seq %d, after b's", got, err, evs[0].Seq+1)
	}
	storetest.MustVerify(t, b)
}

// stallingProjector waits, projecting the stream "stall", until release
// is closed, after a read on the transaction (as a projector's lookup).
type stallingProjector struct {
	entered, release chan struct{}
}

func (p *stallingProjector) Project(ctx context.Context, tx *eventlog.Tx, ev *events.Event, _ events.Payload) error {
	if ev.Stream != "stall" {
		return nil
	}
	var n int64
	if err := tx.QueryRow(`SELECT count(*) FROM events WHERE stream = ?`, "warm-true").Scan(&n); err != nil {
		return err
	}
	close(p.entered)
	<-p.release
	return nil
}

// A connection the server ended (a restart, pg_terminate_backend) while
// the writer was idle answers a late commit's BEGIN with the server's
// FATAL message: nothing ran, so the commit is done again on a new
// connection and the append succeeds, once.
func TestPostgres_ALateCommitOnAnEndedConnectionIsRetried(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	s := storetest.OpenStore(t, tg)
	for v := range int64(3) {
		if _, err := s.Append(ctx, "s", v, placedS(int(v))); err != nil {
			t.Fatal(err)
		}
	}
	last := time.Now()
	// The backends to end are named first: the store's tree builder may
	// dial a new one after its own was ended, which is not one of them.
	for _, q := range []string{
		`CREATE TABLE ended AS SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
		`SELECT pg_terminate_backend(pid) FROM ended`,
	} {
		if err := tg.Exec(t, q); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for the server to have ended them (bounded, not timed).
	gone := func() bool {
		err := tg.Exec(t, `SELECT 1 / (SELECT (count(*) = 0)::int FROM pg_stat_activity WHERE pid IN (SELECT pid FROM ended))`)
		return err == nil
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for !gone() {
		select {
		case <-wait.Done():
			t.Fatal("the terminated backends are still there")
		case <-time.After(5 * time.Millisecond):
		}
	}
	idle := time.Since(last)
	before := s.Stats()
	evs, err := s.Append(ctx, "s", 3, placedS(3))
	if err != nil {
		t.Fatalf("an append on a connection the server ended: %v, want it done again on a new one", err)
	}
	if evs[0].Version != 4 {
		t.Fatalf("landed at version %d, want 4", evs[0].Version)
	}
	// The writer was idle for less than the late bound (a second)
	// unless the machine stalled: then it began the usual way, which
	// retries a failed BEGIN as before.
	if after := s.Stats(); idle < 500*time.Millisecond && after.Missed-before.Missed != 1 {
		t.Fatalf("after %v idle: %d misses, want the late commit's 1", idle, after.Missed-before.Missed)
	}
	got, err := s.ReadStream(ctx, "s", 1)
	if err != nil || len(got) != 4 {
		t.Fatalf("the stream holds %d events (%v), want 4", len(got), err)
	}
	storetest.MustVerify(t, s)
}

// The projections' rows carry seqs (a session's updated_seq, an edge's,
// a usage row's, a run's...), which a late transaction knows only at its
// end: its projector writes placeholders that the server renders. Two
// processes writing agents' logs at once (forks, merges, model and tool
// calls) leave no placeholder in any committed row, and the projections
// equal a rebuild of the log.
func TestPostgres_NoPlaceholderSeqReachesAProjection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	var rts []*rath.Runtime
	for range 2 {
		rt, err := rath.OpenWith(ctx, tg.Options())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		rts = append(rts, rt)
	}
	var wg sync.WaitGroup
	for _, rt := range rts {
		wg.Go(func() { storetest.AgentLog(t, rt, 12, 3) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if late := rts[0].Store().Stats().Late + rts[1].Store().Stats().Late; late == 0 {
		t.Fatal("no commit was sequenced at its end")
	}
	db := rts[0].Store().DB()
	rows, err := db.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type = 'bigint' AND column_name LIKE '%seq%'`)
	if err != nil {
		t.Fatal(err)
	}
	var cols [][2]string
	for rows.Next() {
		var c [2]string
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	if len(cols) < 10 {
		t.Fatalf("%d seq columns found, want the projections' (at least 10): %v", len(cols), cols)
	}
	for _, c := range cols {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+c[0]+` WHERE `+c[1]+` < 0`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Fatalf("%s.%s holds %d negative seqs: a placeholder was committed", c[0], c[1], n)
		}
	}
	rep, err := projections.Check(ctx, rts[0].Store(), projections.CheckOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("the projections against a rebuild: %+v, %v", rep, err)
	}
	storetest.MustVerify(t, rts[0].Store())
}

// Sealed appends on PostgreSQL are sequenced at their end like plain
// ones: the keys they were sealed under are confirmed in their last
// pipeline (one check of the erasure generation for keys the writer found
// before), and no batch is rolled back and written again for it.
func TestPostgres_SealedAppendsCommitLateWithoutARedo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	opts := tg.Options()
	opts.KEK = keyringtest.KEK(t)
	alice := events.ContextWithSubject(ctx, "user:alice")
	// A first runtime makes alice's key and session; the second, a
	// writer that knows nothing yet, is the one measured.
	first, err := rath.OpenWith(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := first.NewUserSession(alice, "a question")
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	db, err := sql.Open("pgx", tg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	keyReads := func() int64 { return subjectKeyScans(t, db) }
	readsBefore := keyReads()
	rt, err := rath.OpenWith(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if s, err = rt.Session(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	before := rt.Store().Stats()
	const n = 30
	for i := range n {
		if s, err = s.Append(alice, session.Chunk{Role: "assistant", Content: fmt.Sprint("answer ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	st := rt.Store().Stats()
	if redone := st.Redone - before.Redone; redone != 0 {
		t.Errorf("%d of %d sealed appends were rolled back and written again", redone, n)
	}
	if late := st.Late - before.Late; late < n-2 {
		t.Errorf("%d of %d sealed appends were sequenced at their end", late, n)
	}
	// A late transaction confirms a key it has not confirmed since the
	// last erasure; once it committed, later ones only check the erasure
	// generation. The keyring's own read of the key, the first
	// transaction's check and the session's reads are a handful; a check
	// each transaction would be n.
	rt.Close()
	reads := keyReads() - readsBefore
	if reads > 6 {
		t.Errorf("%d appends read subject_keys %d times: the key was checked again in every transaction", n, reads)
	}
}

// Every run and session a sealed store has not seen before makes its
// subject a key. On PostgreSQL that is an INSERT of its own on the
// keyring's pool: the writer's round trips stay those of the appends, where an
// exclusive transaction took the chain lock and four round trips a key.
func TestPostgres_NewSubjectsCostTheWriterNoRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	if err := rath.Migrate(ctx, tg.DSN); err != nil {
		t.Fatal(err)
	}
	kr := keyring.New(keyringtest.KEK(t), func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })
	st, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, Sealer: kr})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 20
	appendNew := func(from int) eventlog.Stats {
		before := st.Stats()
		for i := from; i < from+n; i++ {
			stream := fmt.Sprintf("s-new-%d", i) // subject session:s-new-i, no key yet
			if _, err := st.Append(ctx, stream, eventlog.AnyVersion, events.ChunkAppended{Session: stream, Chunk: events.Chunk{Role: "user", Content: "hello"}}); err != nil {
				t.Fatal(err)
			}
		}
		after := st.Stats()
		return eventlog.Stats{Commits: after.Commits - before.Commits, RoundTrips: after.RoundTrips - before.RoundTrips}
	}
	appendNew(0) // the writer's first transactions read its caches
	got := appendNew(n)
	if got.Commits != n {
		t.Fatalf("%d appends made %d commits, want %d", n, got.Commits, n)
	}
	// Two a new stream's append (its head read before the lock, then the
	// commit's pipeline); making the keys on the writer took 11.
	if got.RoundTrips > 3*n {
		t.Errorf("%d appends to new subjects took %d writer round trips: making the keys ran on the writer", n, got.RoundTrips)
	}
	var keys int
	if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM subject_keys WHERE subject LIKE 'session:s-new-%'`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if keys != 2*n {
		t.Errorf("%d keys for %d new subjects", keys, 2*n)
	}
	storetest.MustVerify(t, st)
}

// subjectKeyScans is how often the server read subject_keys, once the
// database's other backends are gone (waitBackendsGone).
func subjectKeyScans(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	waitBackendsGone(t, db)
	var n int64
	err := db.QueryRow(`SELECT COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'subject_keys'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitBackendsGone waits until no other client is connected to db's
// database: a backend flushes its statistics before it leaves
// pg_stat_activity, so the table counters are complete then.
func waitBackendsGone(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var others int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of the closed store still open", others)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An erasure that commits while a late append waits for the chain lock
// is seen by the append's lock statement, which reads the lock's row as
// the erasure left it (its erasure generation): the append does not
// commit content sealed under the destroyed key. It is written again,
// sealed under the subject's new key, and reads back; what was written
// before the erasure stays erased.
func TestPostgres_AnErasureCommittedWhileAnAppendWaitsForTheLockIsSeen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	if err := rath.Migrate(ctx, tg.DSN); err != nil {
		t.Fatal(err)
	}
	kek := keyringtest.KEK(t)
	rebind := func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }
	// The appender's keyring keeps the key it read, as every keyring does
	// for up to keyring.Freshness: the append seals under the key the
	// erasure is destroying, and only its transaction can tell.
	st, err := eventlog.Open(ctx, eventlog.Options{DSN: tg.DSN, Sealer: storetest.StaleSealer(keyring.New(kek, rebind))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chunk := func(text string) events.Payload {
		return events.ChunkAppended{Session: "s", Chunk: events.Chunk{Role: "assistant", Content: text}}
	}
	for i := range 3 { // the key made and confirmed, the writer's caches loaded
		if _, err := st.Append(ctx, "s", eventlog.AnyVersion, chunk(fmt.Sprint("before ", i))); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("pgx", tg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	erasure, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer erasure.Rollback() //nolint:errcheck // committed below
	if _, err := erasure.ExecContext(ctx, `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	erased, err := keyring.New(kek, rebind).Erase(ctx, erasure, "session:s")
	if err != nil {
		t.Fatal(err)
	}
	before := st.Stats()
	done := make(chan error, 1)
	go func() {
		_, err := st.Append(ctx, "s", eventlog.AnyVersion, chunk("after"))
		done <- err
	}()
	// The append's lock statement waits for the erasure's lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%chain_lock%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the append never waited for the chain lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := erasure.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the append after the erasure: %v, want it sealed again under a new key", err)
	}
	if missed := st.Stats().Missed - before.Missed; missed != 1 {
		t.Errorf("%d late transactions missed at their lock, want the one that waited for the erasure", missed)
	}
	got, err := st.ReadStream(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d events in the stream, want 4", len(got))
	}
	last := got[3]
	if last.SealedUnder.ID == "" || last.SealedUnder.ID == erased {
		t.Fatalf("the append after the erasure is sealed under %+v, the erased key is %s", last.SealedUnder, erased)
	}
	if !strings.Contains(string(last.Payload), `"after"`) {
		t.Fatalf("the append after the erasure reads back as %s", last.Payload)
	}
	rows, err := db.QueryContext(ctx, `SELECT payload FROM events WHERE stream = 's' ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var under []bool
	for rows.Next() {
		var payload string
		if err := rows.Scan(&payload); err != nil {
			t.Fatal(err)
		}
		under = append(under, strings.Contains(payload, `"k":"`+erased+`"`))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(under, want) {
		t.Errorf("which stored payloads are sealed under the erased key: %v, want %v", under, want)
	}
	storetest.MustVerify(t, st)
}
