package storetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// Target is one fresh database.
type Target struct {
	// Dir is a directory of the target's own; for SQLite it holds the
	// database (Dir/rath.db).
	Dir string
	// DSN is set for PostgreSQL.
	DSN string
	// Exec runs statements on the database directly, as someone with
	// the database's password could.
	Exec func(t testing.TB, sql string) error
	// DropGuards removes the append-only triggers on events and
	// tree_hashes, as such a person could too.
	DropGuards func(t testing.TB)
	// Files returns the files the database keeps on disk, written out
	// (SQLite's rath.db, -wal and -shm; PostgreSQL's whole data
	// directory, pg_wal too, after a CHECKPOINT): what a grep of the
	// disk, a backup or a stolen volume finds.
	Files func(t testing.TB) []string
}

// Options are the runtime options that open the target.
func (tg Target) Options() rath.Options { return rath.Options{Dir: tg.Dir, DSN: tg.DSN} }

// Backend makes targets.
type Backend struct {
	Name string
	// New returns a fresh, empty database.
	New func(t testing.TB) Target
}

// Run runs the whole suite against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"AppendAndRead", testAppendAndRead},
		{"ConcurrentStoresAppend", testConcurrentStores},
		{"Conflicts", testConflicts},
		{"TriggersRefuseEdits", testTriggers},
		{"TamperingIsFound", testTampering},
		{"TruncationIsFound", testTruncation},
		{"MerkleTamperingIsFoundAtItsSeq", testMerkleTampering},
		{"MerkleProofs", testMerkleProofs},
		{"Redaction", testRedaction},
		{"Erasure", testErasure},
		{"ErasureWhileAppending", testErasureWhileAppending},
		{"SealedAfterErasure", testSealedAfterErasure},
		{"SealedReadHoldingTheReadPool", testSealedReadHoldingTheReadPool},
		{"Retention", testRetention},
		{"KeyedChains", testKeyedChains},
		{"RebuildAndCheck", testRebuild},
		{"RebuildInBulk", testRebuildInBulk},
		{"RebuildReadsEveryKind", testRebuildReadsEveryKind},
		{"HeldSessionUpdates", testHeldUpdates},
		{"HeldSessionUpdatesRefusedInABatch", testHeldUpdatesRefusedInABatch},
		{"OutlineRun", testOutlineRun},
		{"SubscribeAcrossStores", testSubscribe},
		{"RecordAndReplay", testReplay},
		{"FencedAppends", testFenced},
		{"FencedAcrossWriters", testFencedAcrossWriters},
		{"CarriedWrites", testCarriedWrites},
		{"SharedClock", testSharedClock},
		{"SealedContent", testSealed},
		{"SealedColumns", testSealedColumns},
		{"BlobCopiesPerSubject", testBlobCopies},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, b)
		})
	}
}

func open(t testing.TB, tg Target) *rath.Runtime {
	t.Helper()
	rt, err := rath.OpenWith(t.Context(), tg.Options())
	if err != nil {
		t.Fatalf("open %s: %v", describe(tg), err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// OpenStore opens the bare event log of tg (no projections), migrating it
// first, with key as the HMAC key.
func OpenStore(t testing.TB, tg Target, key ...byte) *eventlog.Store {
	t.Helper()
	path := filepath.Join(tg.Dir, rath.DBFile)
	target := path
	if tg.DSN != "" {
		target = tg.DSN
	}
	if err := rath.Migrate(t.Context(), target); err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Open(t.Context(), eventlog.Options{Path: path, DSN: tg.DSN, HMACKey: key})
	if err != nil {
		t.Fatalf("open %s: %v", describe(tg), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func describe(tg Target) string {
	if tg.DSN != "" {
		return "postgres"
	}
	return tg.Dir
}

func placed(session string, n int) events.Payload {
	return &events.SessionPlaced{Session: session, Backend: "local", Spec: fmt.Sprintf("/w/%d", n)}
}

// MustVerify verifies s and fails t unless its log verifies.
func MustVerify(t testing.TB, s *eventlog.Store) *eventlog.VerifyReport {
	t.Helper()
	rep, err := s.Verify(t.Context(), eventlog.VerifyOptions{})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("verify failed: %v", rep.Failure)
	}
	return rep
}

func testAppendAndRead(t *testing.T, b Backend) {
	ctx := t.Context()
	s := OpenStore(t, b.New(t))
	if _, err := s.Append(ctx, "s1", eventlog.NoStream, placed("s1", 1), placed("s1", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s2", eventlog.NoStream, placed("s2", 1)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 40<<10) // over the blob threshold
	if _, err := s.Append(ctx, "s1", 2, &events.SessionPlaced{Session: "s1", Backend: "local", Spec: big}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ReadStream(ctx, "s1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].Seq != 1 || evs[1].Seq != 2 || evs[2].Seq != 4 || evs[2].Version != 3 {
		t.Fatalf("stream s1 = %+v", evs)
	}
	p, err := evs[2].Decode()
	if err != nil || p.(*events.SessionPlaced).Spec != big {
		t.Fatalf("blob payload did not come back: %v", err)
	}
	if v, err := s.StreamVersion(ctx, "s2"); err != nil || v != 1 {
		t.Fatalf("StreamVersion(s2) = %d, %v", v, err)
	}
	h, err := s.Head(ctx)
	if err != nil || h.Seq != 4 || h.Hash != evs[2].Hash {
		t.Fatalf("Head = %v, %v", h, err)
	}
	if got, err := s.Get(ctx, 3); err != nil || got.Stream != "s2" {
		t.Fatalf("Get(3) = %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, 99); !errors.Is(err, eventlog.ErrNotFound) {
		t.Fatalf("Get(99) = %v, want ErrNotFound", err)
	}
	rep := MustVerify(t, s)
	if rep.Head.Seq != 4 {
		t.Fatalf("verify head = %v", rep.Head)
	}
}

// Several stores on one database stand for several processes: their
// appends interleave into one gap-free, verifiable chain and none is lost.
func testConcurrentStores(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	const stores, workers, each = 3, 8, 25
	var mu sync.Mutex
	acked := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, stores*workers)
	for i := range stores {
		s := OpenStore(t, tg)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := fmt.Sprintf("st%d-w%d", i, w)
				shared := "shared"
				for k := range each {
					evs, err := s.Append(ctx, stream, eventlog.AnyVersion, placed(stream, k))
					if err != nil {
						errs <- err
						return
					}
					if k%5 == 0 { // some appends on one stream shared by all
						more, err := s.Append(ctx, shared, eventlog.AnyVersion, placed(shared, k))
						if err != nil {
							errs <- err
							return
						}
						evs = append(evs, more...)
					}
					mu.Lock()
					for _, ev := range evs {
						acked[ev.Seq] = ev.Hash
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := OpenStore(t, tg)
	rep := MustVerify(t, check)
	if rep.Head.Seq != int64(len(acked)) {
		t.Fatalf("head %d, %d appends acknowledged", rep.Head.Seq, len(acked))
	}
	all, err := check.Read(ctx, eventlog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("seq gap: event %d has seq %d", i, ev.Seq)
		}
		if acked[ev.Seq] != ev.Hash {
			t.Fatalf("seq %d: stored hash %s, acknowledged %s", ev.Seq, ev.Hash, acked[ev.Seq])
		}
	}
	v, err := check.StreamVersion(ctx, "shared")
	if err != nil || v != stores*workers*each/5 {
		t.Fatalf("shared stream at %d, %v; want %d", v, err, stores*workers*each/5)
	}
}

// Two stores appending at the same expected version: exactly one wins,
// the other gets a typed conflict, and nothing interleaves.
func testConflicts(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	s1, s2 := OpenStore(t, tg), OpenStore(t, tg)
	if _, err := s1.Append(ctx, "sess", eventlog.NoStream, placed("sess", 0)); err != nil {
		t.Fatal(err)
	}
	v := int64(1)
	for round := range 20 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []*eventlog.Store{s1, s2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Append(ctx, "sess", v, placed("sess", round*2+i+1), placed("sess", round*2+i+100))
			}()
		}
		wg.Wait()
		var won, lost int
		for _, err := range errs {
			var ce *eventlog.ConflictError
			switch {
			case err == nil:
				won++
			case errors.As(err, &ce) && errors.Is(err, eventlog.ErrConflict):
				if ce.Stream != "sess" || ce.Expected != v || ce.Actual != v+2 {
					t.Fatalf("conflict %+v", ce)
				}
				lost++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("round %d: %d won, %d conflicted; want 1 and 1", round, won, lost)
		}
		v += 2
	}
	evs, err := s2.ReadStream(ctx, "sess", 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Version != int64(i+1) {
			t.Fatalf("stream version %d at position %d", ev.Version, i)
		}
	}
	MustVerify(t, s2)
}

// Sessions, forks and merges project into the tables, a rebuild gives the
// same rows, and the projection check finds an edited row.
func testRebuild(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	rt := open(t, tg)
	root, err := rt.NewUserSession(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	a, err := root.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := root.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, err = a.Append(ctx, session.Chunk{Role: "assistant", Content: "from a"}); err != nil {
		t.Fatal(err)
	}
	if c, err = c.Append(ctx, session.Chunk{Role: "assistant", Content: "from c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Merge(ctx, c); err != nil {
		t.Fatal(err)
	}
	before := rebuildKeepsRows(t, rt)
	if len(before["sessions"]) != 4 || len(before["session_edges"]) != 4 {
		t.Fatalf("projected %d sessions and %d edges, want 4 and 4", len(before["sessions"]), len(before["session_edges"]))
	}
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
	if err := tg.Exec(t, `UPDATE sessions SET length = length + 1 WHERE kind = 'merge'`); err != nil {
		t.Fatal(err)
	}
	rep, err = rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.Failure.Reason, "sessions") {
		t.Fatalf("verify after editing a session's length = %v, want a sessions difference", rep.Failure)
	}
	if _, err := rt.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify after rebuild = %+v, %v", rep, err)
	}
}

// An Append's updates of a session row are written together at its end
// (package projections): the rows equal a rebuild's, which applies one
// event at a time, and a bad chunk anywhere refuses the whole Append.
func testHeldUpdates(t *testing.T, b Backend) {
	ctx := t.Context()
	rt := open(t, b.New(t))
	s, err := rt.NewUserSession(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(i int64) events.Payload {
		return events.ChunkAppended{Session: s.ID(), Index: i, Chunk: events.Chunk{Role: "assistant", Content: fmt.Sprint("c", i)}}
	}
	call := events.ProviderCalled{Session: s.ID(), Model: "m", Agent: "a", Usage: events.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}}
	_, err = rt.Store().AppendWrites(ctx,
		eventlog.Write{Stream: s.ID(), Expected: 1, Events: []events.Payload{call, chunk(1), events.ToolReturned{Session: s.ID(), CallID: "t1", Tool: "count"}, chunk(2), call}},
		eventlog.Write{Stream: "fork-1", Expected: eventlog.NoStream, Events: []events.Payload{events.SessionForked{Session: "fork-1", Source: s.ID(), BaseLen: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	var length, version, calls, total int64
	if err := rt.Store().DB().QueryRowContext(ctx, rt.Store().DB().Rebind(`SELECT length, version, calls, total_tokens FROM sessions WHERE id = ?`), s.ID()).
		Scan(&length, &version, &calls, &total); err != nil {
		t.Fatal(err)
	}
	if length != 3 || version != 6 || calls != 2 || total != 18 {
		t.Fatalf("session row: length %d, version %d, calls %d, tokens %d; want 3, 6, 2, 18", length, version, calls, total)
	}
	if _, err := rt.Store().Append(ctx, s.ID(), 6, chunk(3), chunk(5)); !errors.Is(err, projections.ErrInconsistent) {
		t.Fatalf("an Append with a gap after its first chunk: %v, want ErrInconsistent", err)
	}
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// Appends that share a group commit are refused one by one: a chunk at a
// taken index or for a session that does not exist fails its own Append
// with ErrInconsistent, found only when the server updates the session
// row (on PostgreSQL that update is pipelined with later statements, and
// the batch is written again when it changes no row), and its
// batch-mates land with rows equal to a rebuild's.
func testHeldUpdatesRefusedInABatch(t *testing.T, b Backend) {
	ctx := t.Context()
	rt := open(t, b.New(t))
	const n = 25
	ids := make([]string, n)
	for i := range ids {
		s, err := rt.NewUserSession(ctx, fmt.Sprint("session ", i))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID()
	}
	chunk := func(id string, i int64) events.Payload {
		return events.ChunkAppended{Session: id, Index: i, Chunk: events.Chunk{Role: "assistant", Content: fmt.Sprint("c", i)}}
	}
	for round := range 3 {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() {
				var evs []events.Payload
				stream := id
				switch i % 5 {
				case 4: // a gap after held chunks, found as they are held:
					// the batch is written again with a savepoint a
					// request while its other requests queue statements
					evs = []events.Payload{chunk(id, int64(1+2*round)), chunk(id, int64(3+2*round))}
				case 1: // index 0 is the user's message: taken
					evs = []events.Payload{chunk(id, 0), chunk(id, 1)}
				case 2: // a session nobody created
					stream = fmt.Sprint("ghost-", round, "-", i)
					evs = []events.Payload{chunk(stream, 0), events.ProviderCalled{Session: stream, Model: "m", Agent: "a"}}
				case 3:
					// Creating a session inserts its row at once: a
					// statement after the queued ones, in their round trip.
					if _, err := rt.NewUserSession(ctx, "another"); err != nil {
						errs[i] = err
						return
					}
					fallthrough
				default:
					evs = []events.Payload{events.ProviderCalled{Session: id, Model: "m", Agent: "a", Usage: events.Usage{TotalTokens: 3}},
						chunk(id, int64(1+2*round)), chunk(id, int64(2+2*round))}
				}
				_, errs[i] = rt.Store().Append(ctx, stream, eventlog.AnyVersion, evs...)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if bad := i%5 == 1 || i%5 == 2 || i%5 == 4; bad != errors.Is(err, projections.ErrInconsistent) || (!bad && err != nil) {
				t.Fatalf("round %d, append %d: %v (refused: %v)", round, i, err, bad)
			}
		}
	}
	for i, id := range ids {
		var length, calls, total int64
		if err := rt.Store().DB().QueryRowContext(ctx, rt.Store().DB().Rebind(`SELECT length, calls, total_tokens FROM sessions WHERE id = ?`), id).
			Scan(&length, &calls, &total); err != nil {
			t.Fatal(err)
		}
		want := [3]int64{1, 0, 0}
		if i%5 == 0 || i%5 == 3 {
			want = [3]int64{7, 3, 9}
		}
		if got := [3]int64{length, calls, total}; got != want {
			t.Errorf("session %d: length, calls, tokens %v, want %v", i, got, want)
		}
	}
	rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("projections against a rebuild: %+v, %v", rep, err)
	}
	if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// A subscriber sees every event another store (another process) appends,
// in order, without polling on a timer of its own.
func testSubscribe(t *testing.T, b Backend) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tg := b.New(t)
	reader, writer := OpenStore(t, tg), OpenStore(t, tg)
	appendN(t, writer, "s", 3)
	got := make(chan events.Event, 100)
	go func() {
		for ev, err := range reader.Subscribe(ctx, eventlog.Query{FromSeq: 2}) {
			if err != nil {
				return
			}
			got <- ev
		}
	}()
	want := int64(2)
	expect := func(n int) {
		t.Helper()
		for range n {
			select {
			case ev := <-got:
				if ev.Seq != want {
					t.Fatalf("subscriber got seq %d, want %d", ev.Seq, want)
				}
				want++
			case <-ctx.Done():
				t.Fatalf("subscriber waited for seq %d in vain", want)
			}
		}
	}
	expect(2)
	for range 5 {
		appendN(t, writer, "s", 2)
		expect(2)
	}
}

// A run recorded in one runtime replays from the log in another (another
// process), with the model's cassette used up: every answer comes from
// the record.
func testReplay(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	rt := open(t, tg)
	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}, scripted.Entry{Content: "Lyon."}))
	if err != nil {
		t.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, "Capital of France?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "geo", agent, input)
	if err != nil {
		t.Fatal(err)
	}
	if tg.DSN == "" {
		rt.Close() // one SQLite runtime per directory at a time
	}
	other := open(t, tg)
	rep, err := replay.Run(ctx, other, run.ID, agent)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Matched != rep.Recorded || rep.Recorded == 0 {
		t.Fatalf("replay = %+v", rep)
	}
}

// A worker whose lease another worker took can append nothing more to the
// run: its appends fail with a typed error inside their transaction, and
// the new holder's go on.
func testFenced(t *testing.T, b Backend) {
	ctx := t.Context()
	rt := open(t, b.New(t))
	s := rt.Store()
	lease := func(token int64, worker string) {
		t.Helper()
		if _, err := s.Append(ctx, events.LeaseStream("r1"), token-1, events.RunLeased{Run: "r1", Worker: worker, Token: token, ExpiresAt: time.Now().Add(time.Minute).UnixNano()}); err != nil {
			t.Fatal(err)
		}
	}
	lease(1, "a")
	a := s.In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "s"}, Lease: &eventlog.Lease{Run: "r1", Token: 1}})
	if _, err := a.Append(ctx, "r1", eventlog.NoStream, events.RunStarted{Run: "r1", Workflow: "wf", Seed: "s"}); err != nil {
		t.Fatalf("the holder's append: %v", err)
	}
	lease(2, "b") // b takes the run over
	head, _ := s.Head(ctx)
	_, err := a.Append(ctx, "r1", 1, events.RunFinished{Run: "r1", Status: "ok"})
	var fe *eventlog.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, eventlog.ErrFenced) || fe.Token != 1 || fe.Current != 2 {
		t.Fatalf("append under the lost lease = %v, want a *FencedError (1 vs 2)", err)
	}
	// Its renewals are refused too, and nothing was written.
	if _, err := a.Append(ctx, events.LeaseStream("r1"), eventlog.AnyVersion, events.RunLeased{Run: "r1", Worker: "a", Token: 1, ExpiresAt: time.Now().Add(time.Minute).UnixNano(), Renewal: true}); !errors.Is(err, eventlog.ErrFenced) {
		t.Fatalf("renewal under the lost lease = %v, want ErrFenced", err)
	}
	if after, _ := s.Head(ctx); after != head {
		t.Fatalf("the refused appends wrote: head %v -> %v", head, after)
	}
	b2 := s.In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "s"}, Lease: &eventlog.Lease{Run: "r1", Token: 2}})
	if _, err := b2.Append(ctx, "r1", 1, events.RunFinished{Run: "r1", Status: "ok"}); err != nil {
		t.Fatalf("the new holder's append: %v", err)
	}
	MustVerify(t, s)
}
