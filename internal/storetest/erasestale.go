package storetest

import (
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/stalekeys"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/projections"
)

// StaleSealer returns a Sealer over kr whose cache has not seen an
// erasure (stalekeys), for tests of appends sealed under a key erased
// before they commit.
func StaleSealer(kr *keyring.Keyring) eventlog.Sealer { return stalekeys.New(kr) }

// An append sealed under a key that another process erased before the
// append committed is not lost: the append's transaction finds the key
// gone, and the content is sealed again under the subject's new key, so
// it reads back (a run of a subject erased while it runs goes on under
// a new key). The erasure still holds for what was written before it.
func testSealedAfterErasure(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	kek := keyringtest.KEK(t)
	rt, _ := openSealed(t, tg, kek)
	rebind := rt.Store().DB().Rebind
	other, err := eventlog.Open(ctx, eventlog.Options{
		Path: filepath.Join(tg.Dir, rath.DBFile), DSN: tg.DSN,
		Sealer:     StaleSealer(keyring.New(kek, rebind)),
		Projectors: []eventlog.Projector{projections.Projector{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	alice := events.ContextWithSubject(ctx, "user:alice")
	before, err := other.Append(alice, "s-before", eventlog.NoStream, events.SessionCreated{Session: "s-before", Origin: "user"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "while a run goes on"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := other.Append(alice, "s-after", eventlog.NoStream, events.SessionCreated{Session: "s-after", Origin: "user"})
	if err != nil {
		t.Fatalf("an append after the erasure: %v", err)
	}
	for _, x := range []struct {
		seq    int64
		erased bool
	}{{before[0].Seq, true}, {after[0].Seq, false}} {
		ev, err := rt.Store().Get(ctx, x.seq)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Redacted != x.erased {
			t.Fatalf("seq %d reads as erased: %v, want %v (%s)", x.seq, ev.Redacted, x.erased, ev.Payload)
		}
	}
	var id string
	if err := rt.Store().DB().QueryRowContext(ctx, rebind(`SELECT key_id FROM subject_keys WHERE subject = ?`), "user:alice").Scan(&id); err != nil {
		t.Fatalf("alice has no key after the append: %v", err)
	}
	if hashOf(id) == res.KeyIDHash {
		t.Fatal("alice's new content is under the destroyed key")
	}
}
