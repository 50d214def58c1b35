package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// testBlobCopies: the same blob bytes appended by two subjects are
// stored once per subject, so erasing the first leaves the second's copy
// readable (through GetBlob, GetBlobs and its event); the erased
// subject's events read as erased and a blob only it held is erased, and
// the log verifies before and after. A subject given a new key after its
// erasure stores its bytes again, readable.
func testBlobCopies(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	rt, _ := openSealed(t, tg, keyringtest.KEK(t))
	shared := []byte(strings.Repeat("the same attachment bytes ", 8))
	own := []byte(strings.Repeat("only alice has these bytes ", 8))
	addr, ownAddr := eventlog.BlobHash(shared), eventlog.BlobHash(own)
	appendAs := func(subject, stream string, blobs ...[]byte) {
		t.Helper()
		sctx := events.ContextWithSubject(ctx, subject)
		_, err := rt.Store().AppendWrites(sctx, eventlog.Write{Stream: stream, Expected: eventlog.AnyVersion, Blobs: blobs, Events: []events.Payload{
			events.SessionCreated{Session: stream, Origin: "user", Chunks: []events.Chunk{{Role: "user", Content: "attached " + addr}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	appendAs("user:alice", "s-alice", shared, own)
	appendAs("user:bob", "s-bob", shared)
	readsAs := func(stream, want string) {
		t.Helper()
		evs, err := rt.Store().ReadStream(ctx, stream, 1)
		if err != nil || len(evs) == 0 {
			t.Fatalf("read %s: %d events, %v", stream, len(evs), err)
		}
		if got := string(evs[0].Payload); !strings.Contains(got, want) {
			t.Fatalf("%s reads %.80q, want it to hold %q", stream, got, want)
		}
	}
	verifies := func(when string, unopened int64) {
		t.Helper()
		rep, err := rt.Store().Verify(ctx, eventlog.VerifyOptions{})
		if err != nil || !rep.OK() || rep.Unopened != unopened {
			t.Fatalf("verify %s: %v, %+v, %d unopened, want %d", when, err, rep.Failure, rep.Unopened, unopened)
		}
	}
	var copies int
	if err := rt.Store().DB().QueryRowContext(ctx, rt.Store().DB().Rebind(`SELECT count(*) FROM blobs WHERE hash LIKE ?`), addr+"%").Scan(&copies); err != nil || copies != 2 {
		t.Fatalf("%d rows for the shared blob (%v), want one per subject", copies, err)
	}
	verifies("before the erasure", 0)

	if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "erasure request"}); err != nil {
		t.Fatal(err)
	}
	got, err := rt.Store().GetBlob(ctx, addr)
	if err != nil || string(got) != string(shared) {
		t.Fatalf("bob's copy after erasing alice: %.40q, %v", got, err)
	}
	many, err := rt.Store().GetBlobs(ctx, []string{addr, ownAddr})
	if err != nil || string(many[addr]) != string(shared) || many[ownAddr] != nil {
		t.Fatalf("GetBlobs after erasing alice: %d blobs, %v; want bob's copy only", len(many), err)
	}
	if _, err := rt.Store().GetBlob(ctx, ownAddr); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("alice's own blob after her erasure: %v, want ErrErased", err)
	}
	readsAs("s-alice", events.ErasedMarker)
	readsAs("s-bob", addr)
	// Alice's sealed copies stay as ciphertext no one can open: one
	// for each of her two blobs, besides the sessions' payloads.
	verifies("after the erasure", 2)

	// Erasing bob too leaves no copy that opens.
	if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:bob", By: "dpo", Reason: "erasure request"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Store().GetBlob(ctx, addr); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("the shared blob after erasing both: %v, want ErrErased", err)
	}
	// Alice again, with a new key: her bytes are stored anew and read.
	appendAs("user:alice", "s-alice-2", shared)
	if got, err := rt.Store().GetBlob(ctx, addr); err != nil || string(got) != string(shared) {
		t.Fatalf("alice's new copy: %.40q, %v", got, err)
	}
	verifies("after alice came back", 3)
}
