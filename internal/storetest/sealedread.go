package storetest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// A reader that opens sealed content while it holds a read connection
// (a session's chunks are scanned and opened row by row) gets the keys it
// has not cached without a second read connection: with the read pool's
// every connection held so, readers waited for each other for ever (a
// fleet worker's first runs hung). Here the pool has one connection, the
// reader holds it, and a fresh process's keyring knows no key yet.
func testSealedReadHoldingTheReadPool(t *testing.T, b Backend) {
	tg := b.New(t)
	kek := keyringtest.KEK(t)
	rt, _ := openSealed(t, tg, kek)
	alice := events.ContextWithSubject(t.Context(), "user:alice")
	const canary = "canary-5e2a: read while holding the pool"
	sess, err := rt.NewUserSession(alice, canary)
	if err != nil {
		t.Fatal(err)
	}
	rebind := rt.Store().DB().Rebind
	reader, err := eventlog.Open(t.Context(), eventlog.Options{
		Path: filepath.Join(tg.Dir, rath.DBFile), DSN: tg.DSN,
		Sealer: keyring.New(kek, rebind), ReadConns: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rows, err := reader.DB().QueryContext(ctx, rebind(`SELECT seq, stream, type, payload FROM events WHERE stream = ? ORDER BY seq`), sess.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	opened := 0
	for rows.Next() {
		var seq int64
		var stream, typ string
		var payload []byte
		if err := rows.Scan(&seq, &stream, &typ, &payload); err != nil {
			t.Fatal(err)
		}
		if !keyring.IsSealed(payload) {
			t.Fatalf("seq %d is stored in clear", seq)
		}
		pt, erased, err := reader.OpenStored(ctx, seq, stream, typ, payload)
		if err != nil || erased {
			t.Fatalf("open seq %d while holding the read pool's connection: erased %v, %v", seq, erased, err)
		}
		if strings.Contains(string(pt), canary) {
			opened++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if opened != 1 {
		t.Fatalf("opened the chunk %d times, want 1", opened)
	}
}
