package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// errRefused is what refuser returns, and what a staged append it
// refuses in another store must come back as.
var errRefused = errors.New("refused by the projector")

// refuser refuses a placement whose spec is "refuse", as a projection
// refuses an event that contradicts its state.
type refuser struct{}

func (refuser) Project(_ context.Context, _ *events.Tx, _ *events.Event, p events.Payload) error {
	if sp, ok := p.(*events.SessionPlaced); ok && sp.Spec == "refuse" {
		return fmt.Errorf("placement %s: %w", sp.Session, errRefused)
	}
	return nil
}

// stagedDB makes a migrated database and returns its DSN.
func stagedDB(t *testing.T) string {
	t.Helper()
	dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("conf%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rath.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	return dsn
}

func openStaging(t *testing.T, dsn, tag string) *events.Store {
	t.Helper()
	s, err := events.Open(t.Context(), events.Options{DSN: dsn, StagingTag: tag,
		Projectors: []events.Projector{refuser{}}, StagedErrors: []error{errRefused}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// holdChainLock takes the log's lock as a writer of another process
// does, until release is called.
func holdChainLock(t *testing.T, dsn string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			tx.Rollback(context.Background())
			conn.Close(context.Background())
		})
	}
	t.Cleanup(release)
	return release
}

// waitStaged waits until n appends are staged.
func waitStaged(t *testing.T, s *events.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := s.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM append_intents`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d appends staged, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type appended struct {
	evs []events.Event
	err error
}

func appendAsync(s *events.Store, ctx context.Context, stream string, expected int64, spec string) <-chan appended {
	ch := make(chan appended, 1)
	go func() {
		evs, err := s.Append(ctx, stream, expected, &events.SessionPlaced{Session: stream, Backend: "local", Spec: spec})
		ch <- appended{evs, err}
	}()
	return ch
}

// Appends made while another process holds the lock are staged, and the
// next holder writes them all in one commit, its own and the other
// store's alike: in seq order, each with its version check and its
// projectors, and each appender gets back its events or its own typed
// error, a conflict with its fields, a projector's refusal matching the
// projector's error.
func TestPostgres_StagedAppendsAreWrittenByTheNextHolder(t *testing.T) {
	t.Parallel()
	dsn := stagedDB(t)
	a, b := openStaging(t, dsn, "t"), openStaging(t, dsn, "t")
	ctx := t.Context()
	if _, err := a.Append(ctx, "x", events.NoStream, &events.SessionPlaced{Session: "x", Backend: "local", Spec: "0"}); err != nil {
		t.Fatal(err)
	}
	release := holdChainLock(t, dsn)
	ok1 := appendAsync(a, ctx, "a", events.NoStream, "a1")
	conflict := appendAsync(a, ctx, "x", 5, "x?")
	waitStaged(t, a, 2)
	refused := appendAsync(b, ctx, "r", events.NoStream, "refuse")
	ok2 := appendAsync(b, ctx, "b", events.NoStream, "b1")
	waitStaged(t, a, 4)
	release()

	r1, rc, rr, r2 := <-ok1, <-conflict, <-refused, <-ok2
	// Counted once its rows are in, before it waits: read after the
	// replies, not when the rows show (a writer may not have counted yet).
	if a.Stats().Staged+b.Stats().Staged != 4 {
		t.Fatalf("staged: %d + %d, want 4", a.Stats().Staged, b.Stats().Staged)
	}
	if r1.err != nil || r2.err != nil || len(r1.evs) != 1 || len(r2.evs) != 1 {
		t.Fatalf("ok appends: %+v, %+v", r1, r2)
	}
	var ce *events.ConflictError
	if !errors.As(rc.err, &ce) || ce.Stream != "x" || ce.Expected != 5 || ce.Actual != 1 {
		t.Fatalf("conflicting append: %v, want a *ConflictError on x, expected 5, at 1", rc.err)
	}
	if !errors.Is(rr.err, errRefused) {
		t.Fatalf("refused append: %v, want errRefused", rr.err)
	}
	// One holder claimed all four: none was written twice or lost.
	if ca, cb := a.Stats().Combined, b.Stats().Combined; ca+cb != 4 || (ca != 4 && cb != 4) {
		t.Fatalf("written by a: %d, by b: %d; want all 4 by one", ca, cb)
	}
	for _, r := range []appended{r1, r2} {
		got, err := a.Get(ctx, r.evs[0].Seq)
		if err != nil || got.Hash != r.evs[0].Hash || got.Stream != r.evs[0].Stream || !got.At.Equal(r.evs[0].At) {
			t.Fatalf("seq %d stored as %+v (%v), acknowledged as %+v", r.evs[0].Seq, got, err, r.evs[0])
		}
	}
	if r1.evs[0].Seq >= r2.evs[0].Seq {
		t.Fatalf("seqs %d, %d: want staging order", r1.evs[0].Seq, r2.evs[0].Seq)
	}
	rep, err := a.Verify(ctx, events.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Events != 3 {
		t.Fatalf("verify = %+v, %v; want 3 events", rep, err)
	}
	var left int
	if err := a.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM append_intents) + (SELECT count(*) FROM append_outcomes)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d staged rows or outcomes left (%v)", left, err)
	}
}

// A holder writes only the staged appends of its own tag: a store whose
// projectors differ never has its events projected by another's.
func TestPostgres_StagedAppendsOfAnotherTagAreLeftToTheirOwn(t *testing.T) {
	t.Parallel()
	dsn := stagedDB(t)
	a, c := openStaging(t, dsn, "t"), openStaging(t, dsn, "u")
	ctx := t.Context()
	release := holdChainLock(t, dsn)
	fromA := appendAsync(a, ctx, "a", events.NoStream, "a1")
	fromC := appendAsync(c, ctx, "c", events.NoStream, "c1")
	waitStaged(t, a, 2)
	release()
	if r := <-fromA; r.err != nil {
		t.Fatal(r.err)
	}
	if r := <-fromC; r.err != nil {
		t.Fatal(r.err)
	}
	if ca, cc := a.Stats().Combined, c.Stats().Combined; ca != 1 || cc != 1 {
		t.Fatalf("written by a: %d, by c: %d; want each its own", ca, cc)
	}
}

// A caller that gives up while its append is staged takes it back: it is
// never written, though the lock comes free later.
func TestPostgres_AStagedAppendWhoseCallerGaveUpIsWithdrawn(t *testing.T) {
	t.Parallel()
	dsn := stagedDB(t)
	a := openStaging(t, dsn, "t")
	release := holdChainLock(t, dsn)
	ctx, cancel := context.WithCancel(t.Context())
	gone := appendAsync(a, ctx, "g", events.NoStream, "gone")
	waitStaged(t, a, 1)
	cancel()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("append = %v, want context.Canceled", r.err)
	}
	waitStaged(t, a, 0) // withdrawn while the lock is still held
	release()
	if _, err := a.Append(t.Context(), "h", events.NoStream, &events.SessionPlaced{Session: "h", Backend: "local", Spec: "1"}); err != nil {
		t.Fatal(err)
	}
	if v, err := a.StreamVersion(t.Context(), "g"); err != nil || v != 0 {
		t.Fatalf("stream g at %d (%v): the withdrawn append was written", v, err)
	}
}

// A staged append nobody writes within the busy timeout (the lock's
// holder is stuck) is withdrawn and fails with ErrBusy, as a wait for the
// lock itself does: staging never waits longer than the lock would.
func TestPostgres_AStagedAppendNobodyWritesFailsBusy(t *testing.T) {
	t.Parallel()
	dsn := stagedDB(t)
	a, err := events.Open(t.Context(), events.Options{DSN: dsn, StagingTag: "t", BusyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	release := holdChainLock(t, dsn)
	stuck := appendAsync(a, t.Context(), "s", events.NoStream, "stuck")
	// The intent may be withdrawn before a poll of append_intents sees it
	// (300 ms on a loaded machine), so the store's own count, read after
	// the append fails, says it was staged.
	select {
	case r := <-stuck:
		var se *events.StorageError
		if !errors.Is(r.err, events.ErrBusy) || !errors.As(r.err, &se) {
			t.Fatalf("append = %v, want a *StorageError matching ErrBusy", r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the staged append still waits 30 s after a busy timeout of 300 ms")
	}
	if st := a.Stats(); st.Staged != 1 {
		t.Fatalf("staged %d, want 1: the append was not staged, so the test says nothing", st.Staged)
	}
	waitStaged(t, a, 0)
	release()
	if _, err := a.Append(t.Context(), "h", events.NoStream, &events.SessionPlaced{Session: "h", Backend: "local", Spec: "1"}); err != nil {
		t.Fatal(err)
	}
	if v, err := a.StreamVersion(t.Context(), "s"); err != nil || v != 0 {
		t.Fatalf("stream s at %d (%v): the append that failed was written", v, err)
	}
	if _, err := a.Verify(t.Context(), events.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}
