package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// openSealed opens tg with kek, and gives subjects keys as a writer
// sealing their content would (another keyring over the same table).
func openSealed(t *testing.T, tg Target, kek keyring.KEK, subjects ...string) (*rath.Runtime, map[string]string) {
	t.Helper()
	opts := tg.Options()
	opts.KEK = kek
	rt, err := rath.OpenWith(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ids := map[string]string{}
	for i, s := range subjects {
		ids[s] = createKey(t, rt, kek, s, i)
	}
	return rt, ids
}

// createKey gives subject a key in the transaction of an append, as a
// writer sealing the subject's first content does, and returns its id.
func createKey(t *testing.T, rt *rath.Runtime, kek keyring.KEK, subject string, n int) string {
	t.Helper()
	kr := keyring.New(kek, rt.Store().DB().Rebind)
	var id string
	create := func(ctx context.Context, tx *sql.Tx) error {
		dk, err := kr.Create(ctx, tx, subject)
		if dk != nil {
			id = dk.ID
		}
		return err
	}
	stream := "keyed-" + strconv.Itoa(n)
	if _, err := rt.Store().AppendTx(t.Context(), create, eventlog.Write{Stream: stream, Expected: eventlog.NoStream, Events: []events.Payload{events.SessionCreated{Session: stream, Origin: "user"}}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func hashOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Erasure destroys one subject's key and records it in one transaction;
// verify lists it, and fails when the destroyed key is put back. A subject
// without a key, erased or never seen, is a typed error that writes
// nothing; two erasures of one subject at once make one record.
func testErasure(t *testing.T, b Backend) {
	ctx := t.Context()
	t.Run("key gone, record written, verify lists it", func(t *testing.T) {
		tg := b.New(t)
		kek := keyringtest.KEK(t)
		rt, ids := openSealed(t, tg, kek, "user:alice", "user:bob")
		res, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "erasure request 42"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Record.Type != events.TypeEvidenceErased || res.KeyIDHash != hashOf(ids["user:alice"]) {
			t.Fatalf("erase = %+v, want an evidence.erased record with the hash of key %s", res, ids["user:alice"])
		}
		var left []string
		// The sessions openSealed made have keys of their own (session:…);
		// of the users, only bob's is left.
		if err := rt.Store().DB().SelectContext(ctx, &left, `SELECT subject FROM subject_keys WHERE subject LIKE 'user:%' ORDER BY subject`); err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0] != "user:bob" {
			t.Fatalf("subject_keys holds %v after erasing alice, want bob's only", left)
		}
		rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
		if err != nil || !rep.OK() {
			t.Fatalf("verify after the erasure: %v %v", err, rep.Failure)
		}
		if len(rep.Erasures) != 1 || rep.Erasures[0].String() != "user:alice: erased at seq "+strconv.FormatInt(res.Record.Seq, 10)+" by dpo: erasure request 42" {
			t.Fatalf("verify lists %v", rep.Erasures)
		}
		head := rep.Head

		for _, tc := range []struct {
			subject  string
			want     error
			erasedAt int64
		}{
			{"user:alice", rath.ErrNothingToErase, res.Record.Seq},
			{"user:carol", rath.ErrNothingToErase, 0},
			{"user:with space", keyring.ErrSubject, 0},
			{"nobody", keyring.ErrSubject, 0},
		} {
			_, err := rt.Erase(ctx, rath.EraseOptions{Subject: tc.subject, By: "dpo", Reason: "again"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("erase %q: %v, want %v", tc.subject, err, tc.want)
			}
			var ee *rath.EraseError
			if errors.As(err, &ee) && ee.ErasedAt != tc.erasedAt {
				t.Fatalf("erase %q: erased at %d, want %d (%v)", tc.subject, ee.ErasedAt, tc.erasedAt, err)
			}
		}
		if h, _ := rt.Store().Head(ctx); h != head {
			t.Fatalf("a refused erasure wrote to the log: head %v, was %v", h, head)
		}

		// The destroyed key restored from a copy undoes the erasure:
		// verify says so at the record's seq.
		if err := tg.Exec(t, `INSERT INTO subject_keys (subject, key_id, wrapped, kek_id, created_at) SELECT 'user:alice', '`+ids["user:alice"]+`', wrapped, kek_id, created_at FROM subject_keys WHERE subject = 'user:bob'`); err != nil {
			t.Fatal(err)
		}
		rep, err = rt.Verify(ctx, eventlog.VerifyOptions{})
		if err != nil || rep.OK() || rep.Failure.Seq != res.Record.Seq || !strings.Contains(rep.Failure.Reason, "in the store again") {
			t.Fatalf("verify with the destroyed key restored: %v %+v", err, rep.Failure)
		}
		if err := tg.Exec(t, `DELETE FROM subject_keys WHERE subject = 'user:alice'`); err != nil {
			t.Fatal(err)
		}
		// A new key for the subject is not the destroyed one: it can be
		// erased in turn, and verify lists both.
		createKey(t, rt, kek, "user:alice", 3)
		if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "second request"}); err != nil {
			t.Fatal(err)
		}
		if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || len(rep.Erasures) != 2 {
			t.Fatalf("verify after a second erasure: %v %+v %v", err, rep.Failure, rep.Erasures)
		}
	})
	t.Run("at once, one record", func(t *testing.T) {
		tg := b.New(t)
		rt, _ := openSealed(t, tg, keyringtest.KEK(t), "user:alice")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "at once"})
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, rath.ErrNothingToErase):
				t.Fatalf("a concurrent erasure failed otherwise: %v", err)
			}
		}
		if erasures, err := rt.Erasures(ctx); ok != 1 || err != nil || len(erasures) != 1 {
			t.Fatalf("%d erasures succeeded and %d were recorded (%v), want 1", ok, len(erasures), err)
		}
	})
	t.Run("no KEK", func(t *testing.T) {
		rt := open(t, b.New(t))
		if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "r"}); !errors.Is(err, rath.ErrNoKEK) {
			t.Fatalf("erase without a KEK: %v, want ErrNoKEK", err)
		}
	})
}

// Erasures race appends that give the same subjects keys: every erasure
// that succeeds is recorded once, destroys a key no later append brings
// back, and the store verifies (its projections equal a rebuild) at the
// end. Bounded by counts, not time.
func testErasureWhileAppending(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	kek := keyringtest.KEK(t)
	// Each subject starts with a key, so some erasures succeed however
	// the goroutines are scheduled.
	subjects := []string{"user:s0", "user:s1", "user:s2"}
	rt, _ := openSealed(t, tg, kek, subjects...)
	var wg sync.WaitGroup
	var mu sync.Mutex // protects erased and failures
	erased := 0
	var failures []error
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}
	for a := range 3 {
		wg.Go(func() {
			kr := keyring.New(kek, rt.Store().DB().Rebind)
			for i := range 20 {
				stream := "chaos-" + strconv.Itoa(a) + "-" + strconv.Itoa(i)
				create := func(ctx context.Context, tx *sql.Tx) error {
					_, err := kr.Create(ctx, tx, subjects[(a+i)%len(subjects)])
					return err
				}
				if _, err := rt.Store().AppendTx(ctx, create, eventlog.Write{Stream: stream, Expected: eventlog.NoStream, Events: []events.Payload{events.SessionCreated{Session: stream, Origin: "user"}}}); err != nil {
					fail(err)
				}
			}
		})
	}
	for e := range 2 {
		wg.Go(func() {
			for i := range 6 {
				_, err := rt.Erase(ctx, rath.EraseOptions{Subject: subjects[(e+i)%len(subjects)], By: "dpo", Reason: "chaos"})
				switch {
				case err == nil:
					mu.Lock()
					erased++
					mu.Unlock()
				case !errors.Is(err, rath.ErrNothingToErase):
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d operations failed; the first: %v", len(failures), failures[0])
	}
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify after the race: %v %v", err, rep.Failure)
	}
	seen := map[string]bool{}
	for _, e := range rep.Erasures {
		if seen[e.KeyIDHash] {
			t.Fatalf("key %s was erased twice", e.KeyIDHash)
		}
		seen[e.KeyIDHash] = true
	}
	if erased == 0 || len(rep.Erasures) != erased {
		t.Fatalf("%d erasures succeeded, %d recorded", erased, len(rep.Erasures))
	}
}
