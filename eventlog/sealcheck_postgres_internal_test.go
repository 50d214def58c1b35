//go:build integration

package eventlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/stalekeys"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/migrations"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// readsItsSeq reads, on an evidence event (a stream never sealed), its
// own seq: in a transaction sequenced at its end the seq is a placeholder
// only the transaction can render, so the read sends the transaction's
// BEGIN and lock before the batch's last pipeline.
type readsItsSeq struct{}

func (readsItsSeq) Project(_ context.Context, tx *Tx, ev *events.Event, _ events.Payload) error {
	if ev.Stream != events.StreamEvidence {
		return nil
	}
	var seq int64
	return tx.QueryRow(`SELECT $1::bigint`, ev.Seq).Scan(&seq)
}

// migratedPostgres starts a PostgreSQL cluster and returns the DSN of a
// database at the latest schema.
func migratedPostgres(t *testing.T) string {
	t.Helper()
	srv, err := pgtest.Start(t.Context(), pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(t.Context(), "rath")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParsePostgresDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if _, err := migrations.Up(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// A transaction sequenced at its end whose lock went out before a sealed
// request joined it (an earlier request's projector read through it)
// checks the erasure generation in a statement of its own: an erasure
// that committed after the writer last confirmed the request's key fails
// the batch, and the request is sealed again under the subject's new
// key, instead of committing content under a destroyed one.
func TestPostgres_AKeyCheckAfterTheLockWentOutSeesAnErasure(t *testing.T) {
	ctx := t.Context()
	dsn := migratedPostgres(t)
	kek := keyringtest.KEK(t)
	rebind := func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }
	s, err := Open(ctx, Options{DSN: dsn, Sealer: stalekeys.New(keyring.New(kek, rebind)),
		Projectors: []Projector{readsItsSeq{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The evidence event stands for any request with nothing sealed.
	evidence := func(reason string) *events.EvidenceErased {
		return &events.EvidenceErased{Subject: "user:nobody", By: "test", Reason: reason, KeyIDHash: strings.Repeat("0", 64)}
	}
	alice := events.ContextWithSubject(ctx, "user:alice")
	chunk := func(i int64, text string) *events.ChunkAppended {
		return &events.ChunkAppended{Session: "sa", Index: i, Chunk: events.Chunk{Role: "user", Content: text}}
	}
	// The writer learns the erasure generation and confirms alice's key.
	if _, err := s.Append(ctx, events.StreamEvidence, AnyVersion, evidence("warm")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(alice, "sa", AnyVersion, chunk(0, "before")); err != nil {
		t.Fatal(err)
	}
	// Another process erases alice.
	other, err := Open(ctx, Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	eraser := keyring.New(kek, rebind)
	if err := other.Exclusive(ctx, func(ctx context.Context, tx *Tx) error {
		_, err := eraser.Erase(ctx, txQuerier{tx}, "user:alice")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Hold the writer while the evidence event and then alice's chunk
	// (sealed under her stale key) queue, so that they are one batch, the
	// evidence event first.
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.Exclusive(ctx, func(context.Context, *Tx) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	type outcome struct {
		evs []events.Event
		err error
	}
	noted, chunked := make(chan outcome, 1), make(chan outcome, 1)
	// queued waits for the writer's queue to hold n requests; an append
	// that answers before it queued (it failed) ends the test.
	queued := func(n int, answered chan outcome) {
		for len(s.reqs) < n {
			select {
			case o := <-answered:
				t.Fatalf("an append answered before the writer took it: %v", o.err)
			case <-time.After(time.Millisecond):
			}
		}
	}
	go func() {
		evs, err := s.Append(ctx, events.StreamEvidence, AnyVersion, evidence("x"))
		noted <- outcome{evs, err}
	}()
	queued(1, noted)
	go func() {
		evs, err := s.Append(alice, "sa", AnyVersion, chunk(1, "after the erasure"))
		chunked <- outcome{evs, err}
	}()
	queued(2, chunked)
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	ev, ch := <-noted, <-chunked
	if ev.err != nil || ch.err != nil {
		t.Fatalf("evidence: %v; chunk: %v", ev.err, ch.err)
	}
	// Read by a process whose keyring knows only what the store holds.
	reader, err := Open(ctx, Options{DSN: dsn, Sealer: keyring.New(kek, rebind)})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	got, err := reader.Get(ctx, ch.evs[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if got.Redacted {
		t.Fatal("alice's chunk written after the erasure reads as erased: it was committed under her destroyed key")
	}
	if c, err := events.DecodeChunkAppended(got.Payload, got.TypeVersion); err != nil || c.Chunk.Content != "after the erasure" {
		t.Fatalf("alice's chunk reads %q (%v)", got.Payload, err)
	}
	var keys int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM subject_keys WHERE subject = 'user:alice'`).Scan(&keys); err != nil || keys != 1 {
		t.Fatalf("alice has %d keys (%v), want her new one", keys, err)
	}
}
