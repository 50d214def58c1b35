package eventlog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
	"golang.org/x/mod/sumdb/tlog"
)

// MustOpenStore opens a migrated store in a temporary directory.
func MustOpenStore(tb testing.TB, opts eventlog.Options) *eventlog.Store {
	tb.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(tb.TempDir(), "rath.db")
	}
	migrate(tb, opts.Path)
	s, err := eventlog.Open(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func migrate(tb testing.TB, path string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Up(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
}

// rawDB opens the database behind the store's back, as an attacker or a
// broken tool would.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func placed(session, backend string) events.Payload {
	return events.SessionPlaced{Session: session, Backend: backend, Spec: "./w"}
}

func TestStore_AppendAndRead(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	evs, err := s.Append(ctx, "s1", eventlog.NoStream, placed("s1", "local"), placed("s1", "bwrap"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(evs), 2; got != want {
		t.Fatalf("len = %d, want %d", got, want)
	}
	if evs[0].Seq != 1 || evs[1].Seq != 2 || evs[0].Version != 1 || evs[1].Version != 2 {
		t.Fatalf("seq/version = %d/%d %d/%d", evs[0].Seq, evs[0].Version, evs[1].Seq, evs[1].Version)
	}
	if _, err := s.Append(ctx, "s2", eventlog.NoStream, placed("s2", "local")); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "s1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Hash != evs[1].Hash || string(got[1].Payload) != string(evs[1].Payload) {
		t.Fatalf("ReadStream = %+v", got)
	}
	p, err := got[1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	if sp := p.(*events.SessionPlaced); sp.Backend != "bwrap" {
		t.Fatalf("decoded backend %q", sp.Backend)
	}
	all, err := s.Read(ctx, eventlog.Query{FromSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Seq != 2 {
		t.Fatalf("Read from 2 = %d events", len(all))
	}
	h, err := s.Head(ctx)
	if err != nil || h.Seq != 3 {
		t.Fatalf("Head = %v, %v", h, err)
	}
}

func TestStore_AppendConflict(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "a")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "b"))
	var ce *eventlog.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("err = %v, want a ConflictError", err)
	}
	if ce.Expected != 0 || ce.Actual != 1 || ce.Stream != "s" {
		t.Fatalf("conflict = %+v", ce)
	}
	if _, err := s.Append(ctx, "s", 1, placed("s", "b")); err != nil {
		t.Fatalf("append at the right version: %v", err)
	}
	if _, err := s.Append(ctx, "s", eventlog.AnyVersion, placed("s", "c")); err != nil {
		t.Fatalf("append at any version: %v", err)
	}
	if v, _ := s.StreamVersion(ctx, "s"); v != 3 {
		t.Fatalf("version = %d, want 3", v)
	}
}

func TestStore_AppendRejectsBadPayloads(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	tests := []struct {
		name   string
		stream string
		p      events.Payload
	}{
		{"wrong stream", "other", placed("s", "local")},
		{"missing backend", "s", events.SessionPlaced{Session: "s"}},
		{"bad role", "s", events.ChunkAppended{Session: "s", Chunk: events.Chunk{Role: "wizard"}}},
		{"tool result without call id", "s", events.ChunkAppended{Session: "s", Chunk: events.Chunk{Role: "tool_result"}}},
		{"nil", "s", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Append(ctx, tt.stream, eventlog.AnyVersion, tt.p)
			if !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if h, _ := s.Head(ctx); h.Seq != 0 {
		t.Fatalf("head = %d after rejected appends", h.Seq)
	}
}

// A failing request in a group commit must not take its batch-mates down.
func TestStore_GroupCommitIsolatesFailures(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			stream := fmt.Sprintf("s%d", i%20) // 10 appends per stream at NoStream: 1 wins each
			_, errs[i] = s.Append(ctx, stream, eventlog.NoStream, placed(stream, "local"))
		})
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, eventlog.ErrConflict):
			conflicts++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 20 || conflicts != 180 {
		t.Fatalf("ok=%d conflicts=%d, want 20 and 180", ok, conflicts)
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Events != 20 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

func TestStore_ConcurrentAppendsAreDurableAndOrdered(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	const goroutines, per = 16, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			stream := fmt.Sprintf("g%d", g)
			for i := range per {
				if _, err := s.Append(ctx, stream, int64(i), placed(stream, fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		evs, err := s.ReadStream(ctx, fmt.Sprintf("g%d", g), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != per {
			t.Fatalf("stream g%d has %d events, want %d", g, len(evs), per)
		}
		for i, ev := range evs {
			if !strings.Contains(string(ev.Payload), fmt.Sprintf(`"backend":"%d"`, i)) {
				t.Fatalf("g%d v%d payload %s out of order", g, ev.Version, ev.Payload)
			}
		}
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Events != goroutines*per {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

func TestStore_LargePayloadsGoToBlobs(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path, BlobThreshold: 1024})
	big := strings.Repeat("x", 5000)
	p := events.ChunkAppended{Session: "s", Chunk: events.Chunk{Role: "user", Content: big}}
	if _, err := s.Append(ctx, "s", eventlog.NoStream, p, p); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ReadStream(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		got, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if got.(*events.ChunkAppended).Chunk.Content != big {
			t.Fatal("payload not resolved from blob")
		}
	}
	db := rawDB(t, path)
	var stored string
	if err := db.QueryRow(`SELECT payload FROM events WHERE seq = 1`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stored, `{"$blob":"`) || len(stored) > 200 {
		t.Fatalf("stored payload is not a blob reference: %.80s", stored)
	}
	var blobs int
	db.QueryRow(`SELECT count(*) FROM blobs`).Scan(&blobs)
	if blobs != 1 {
		t.Fatalf("blobs = %d, want 1 (identical content stored once)", blobs)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Blobs != 1 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
	// Tampering with the blob is caught.
	if _, err := db.Exec(`UPDATE blobs SET bytes = ?`, []byte("evil")); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || rep.OK() || rep.Failure.Seq != 1 {
		t.Fatalf("verify after blob tamper = %+v, %v; want failure at seq 1", rep.Failure, err)
	}
}

func TestStore_TriggersRefuseEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path})
	if _, err := s.Append(t.Context(), "s", eventlog.NoStream, placed("s", "local")); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for _, q := range []string{`UPDATE events SET payload = '{}'`, `DELETE FROM events`} {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: err = %v, want append-only refusal", q, err)
		}
	}
}

func TestStore_VerifyFindsTamperingAndTruncation(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path})
	for i := range 10 {
		if _, err := s.Append(ctx, "s", int64(i), placed("s", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
	head := rep.Head
	eight, err := s.TreeHeadAt(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.Exec(`DROP TRIGGER events_no_delete`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM events WHERE seq > 8`); err != nil {
		t.Fatal(err)
	}
	// The Merkle tree still has the deleted events' leaves.
	rep, _ = s.Verify(ctx, eventlog.VerifyOptions{})
	if rep.OK() || rep.Failure.Seq != 9 {
		t.Fatalf("verify after the tail's events were deleted = %+v, want a failure at seq 9", rep.Failure)
	}
	// Truncating the tree and its recorded head too leaves a shorter log
	// that is valid.
	if _, err := db.Exec(`DROP TRIGGER tree_hashes_no_delete`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM tree_hashes WHERE id >= ?`, tlog.StoredHashCount(8)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE store_meta SET value = ? WHERE key = 'merkle_head'`, eight.String()); err != nil {
		t.Fatal(err)
	}
	rep, _ = s.Verify(ctx, eventlog.VerifyOptions{})
	if !rep.OK() {
		t.Fatalf("truncation of the events and the tree should keep the log valid: %v", rep.Failure)
	}
	rep, _ = s.Verify(ctx, eventlog.VerifyOptions{Head: &head})
	if rep.OK() || rep.Failure.Seq != 10 || !strings.Contains(rep.Failure.Reason, "truncated") {
		t.Fatalf("verify with head = %+v, want truncation at 10", rep.Failure)
	}
	if _, err := db.Exec(`DROP TRIGGER events_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE events SET payload = replace(payload, '"4"', '"40"') WHERE seq = 5`); err != nil {
		t.Fatal(err)
	}
	rep, _ = s.Verify(ctx, eventlog.VerifyOptions{})
	if rep.OK() || rep.Failure.Seq != 5 {
		t.Fatalf("verify after edit = %+v, want failure at seq 5", rep.Failure)
	}
	if !errors.Is(rep.Failure, eventlog.ErrVerify) {
		t.Fatal("failure does not match ErrVerify")
	}
}

func TestStore_HMACKey(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path, HMACKey: []byte("k1")})
	if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "local")); err != nil {
		t.Fatal(err)
	}
	if rep, _ := s.Verify(ctx, eventlog.VerifyOptions{}); !rep.OK() {
		t.Fatalf("verify with the key: %v", rep.Failure)
	}
	s.Close()
	other, err := eventlog.Open(ctx, eventlog.Options{Path: path, HMACKey: []byte("k2")})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if rep, _ := other.Verify(ctx, eventlog.VerifyOptions{}); rep.OK() || rep.Failure.Seq != 1 {
		t.Fatalf("verify with the wrong key = %+v, want failure at seq 1", rep.Failure)
	}
}

func TestStore_Subscribe(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	if _, err := s.Append(ctx, "a", eventlog.NoStream, placed("a", "local")); err != nil {
		t.Fatal(err)
	}
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan int64, 10)
	go func() {
		for ev, err := range s.Subscribe(sub, eventlog.Query{FromSeq: 1, Stream: "a"}) {
			if err != nil {
				return
			}
			got <- ev.Seq
		}
		close(got)
	}()
	if seq := <-got; seq != 1 {
		t.Fatalf("first = %d", seq)
	}
	s.Append(ctx, "b", eventlog.NoStream, placed("b", "local"))
	s.Append(ctx, "a", 1, placed("a", "bwrap"))
	if seq := <-got; seq != 3 {
		t.Fatalf("second = %d, want 3 (stream filter)", seq)
	}
	cancel()
	for range got {
	}
}

func TestStore_AppendWritesIsAtomic(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	s.Append(ctx, "b", eventlog.NoStream, placed("b", "x"))
	_, err := s.AppendWrites(ctx,
		eventlog.Write{Stream: "a", Expected: eventlog.NoStream, Events: []events.Payload{placed("a", "x")}},
		eventlog.Write{Stream: "b", Expected: eventlog.NoStream, Events: []events.Payload{placed("b", "y")}},
	)
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("err = %v, want conflict", err)
	}
	if v, _ := s.StreamVersion(ctx, "a"); v != 0 {
		t.Fatalf("stream a has version %d after a failed atomic write", v)
	}
}

func TestStore_ClosedStore(t *testing.T) {
	s := MustOpenStore(t, eventlog.Options{})
	s.Close()
	if _, err := s.Append(t.Context(), "s", eventlog.NoStream, placed("s", "x")); !errors.Is(err, eventlog.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// refuseBad is a projector that refuses placements on backend "bad", as a
// read model refuses an inconsistent event.
type refuseBad struct{}

func (refuseBad) Project(ctx context.Context, tx *eventlog.Tx, ev *events.Event, p events.Payload) error {
	if sp, ok := p.(*events.SessionPlaced); ok && sp.Backend == "bad" {
		return errors.New("refused by projector")
	}
	return nil
}

// A request refused by a projector after it wrote must be rolled back
// alone; the others in its group commit land.
func TestStore_ProjectorFailureIsIsolated(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{Projectors: []eventlog.Projector{refuseBad{}}})
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			stream := fmt.Sprintf("s%d", i)
			backend := "good"
			if i%3 == 0 {
				backend = "bad"
			}
			_, errs[i] = s.Append(ctx, stream, eventlog.NoStream, placed(stream, "x"), placed(stream, backend))
		})
	}
	wg.Wait()
	good := 0
	for i, err := range errs {
		if i%3 == 0 {
			if err == nil || !strings.Contains(err.Error(), "refused by projector") {
				t.Fatalf("request %d: err = %v, want the projector's refusal", i, err)
			}
			if v, _ := s.StreamVersion(ctx, fmt.Sprintf("s%d", i)); v != 0 {
				t.Fatalf("refused request %d left %d events", i, v)
			}
			continue
		}
		if err != nil {
			t.Fatalf("request %d failed with its batch-mate: %v", i, err)
		}
		good++
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Events != int64(2*good) {
		t.Fatalf("verify = %+v, %v; want %d events", rep, err, 2*good)
	}
}

func TestStore_VerifyFindsAMissingReferencedBlob(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, eventlog.Options{Path: path})
	out := []byte("tool output")
	ret := events.ToolReturned{Session: "s", CallID: "c1", Tool: "t", OutputRef: eventlog.BlobHash(out)}
	if _, err := s.AppendWrites(ctx, eventlog.Write{Stream: "s", Expected: eventlog.NoStream, Events: []events.Payload{ret}, Blobs: [][]byte{out}}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := s.Verify(ctx, eventlog.VerifyOptions{}); !rep.OK() {
		t.Fatalf("verify = %v", rep.Failure)
	}
	if _, err := rawDB(t, path).Exec(`DELETE FROM blobs`); err != nil {
		t.Fatal(err)
	}
	rep, _ := s.Verify(ctx, eventlog.VerifyOptions{})
	if rep.OK() || rep.Failure.Seq != 1 || !strings.Contains(rep.Failure.Reason, "missing") {
		t.Fatalf("verify after deleting the output blob = %+v", rep.Failure)
	}
}

// A transaction left open on the writer's SQLite connection (a BEGIN that
// its timeout cut short reported failing, but ran) is rolled back at the
// next begin, instead of failing that append and every later one with
// "cannot start a transaction within a transaction".
func TestStore_AppendAfterATransactionLeftOpen(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	if _, err := s.Append(ctx, "s1", eventlog.NoStream, placed("s1", "local")); err != nil {
		t.Fatal(err)
	}
	if err := eventlog.LeaveATransactionOpen(s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s1", 1, placed("s1", "bwrap")); err != nil {
		t.Fatalf("append after a transaction was left open: %v", err)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
