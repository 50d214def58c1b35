package rath_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/migrations"
	"github.com/gorath/rath/session"
)

// A subject's sessions and memories made outside any run (a library
// user's own, or a run's input session before its run starts) are erased
// with it, and the log still rebuilds: the erasure finds them by the key
// they are sealed under, not through the subject's runs. It keeps the
// sessions' shapes and drops their sandbox and usage; the memory leaves
// the memory index. The session goes on after the erasure (a provider
// call, a chunk, a fork of its fork, a merge with it), under the subject's new key;
// verify, which compares the projections with a rebuild, passes, also
// after a migration from before the index refilled it, and a rebuild
// succeeds.
func TestErase_SessionsOutsideRunsStillRebuild(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := t.Context()
			rt, opts := openSealed(t, backend)
			alice := events.ContextWithSubject(ctx, "user:alice")
			s, err := rt.NewUserSession(alice, "alice's question")
			if err != nil {
				t.Fatal(err)
			}
			// A model call and a placement before the erasure: their
			// usage and sandbox go with it.
			early := []byte("an early request")
			if s, err = s.Emit(alice, [][]byte{early}, events.ProviderCalled{Session: s.ID(), Model: "m", RequestRef: eventlog.BlobHash(early),
				Usage: events.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}}); err != nil {
				t.Fatal(err)
			}
			if s, err = s.To(alice, "local", "/w/alice"); err != nil {
				t.Fatal(err)
			}
			fork, err := s.Fork(alice)
			if err != nil {
				t.Fatal(err)
			}
			// A memory alice's program remembered outside any run.
			m, err := rt.Memory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			const canary = "zqxaliceoutsidecanary"
			if _, err := m.Remember(alice, "notes", "alice said "+canary, nil); err != nil {
				t.Fatal(err)
			}
			if hits, err := m.Recall(ctx, "notes", canary, 5); err != nil || len(hits) != 1 {
				t.Fatalf("before the erasure the memory recalls %v, %v", hits, err)
			}
			if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "test", Reason: "asked"}); err != nil {
				t.Fatal(err)
			}
			if n := storetest.CountInDir(t, filepath.Join(opts.Dir, rath.MemoryDir), canary); n != 0 {
				t.Errorf("after the erasure the memory's text is %d times in the memory index", n)
			}
			if hits, err := m.Recall(ctx, "notes", canary, 5); err != nil || len(hits) != 0 {
				t.Errorf("after the erasure the memory recalls %v, %v", hits, err)
			}
			// The sessions go on, under alice's new key.
			req := []byte("a request")
			if s, err = s.Emit(alice, [][]byte{req}, events.ProviderCalled{Session: s.ID(), Model: "m", RequestRef: eventlog.BlobHash(req),
				Usage: events.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(alice, session.Chunk{Role: "assistant", Content: "an answer"}); err != nil {
				t.Fatal(err)
			}
			if _, err := fork.Fork(alice); err != nil {
				t.Fatal(err)
			}
			// A merge reads its parents' ancestry, whose creation events
			// are erased: it takes the shapes the erasure kept.
			if _, err := s.Merge(alice, fork); err != nil {
				t.Fatal(err)
			}
			// Bob's session stays whole.
			bob := events.ContextWithSubject(ctx, "user:bob")
			b, err := rt.NewUserSession(bob, "bob's question")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Fork(bob); err != nil {
				t.Fatal(err)
			}
			// A store migrated from before the index fills it from the
			// sealed payloads: as a rebuild does, which verify compares.
			var db *sql.DB
			if opts.DSN == "" {
				db, err = sql.Open("sqlite", eventlog.DSN(filepath.Join(opts.Dir, rath.DBFile), false, "busy_timeout(10000)"))
			} else {
				db, err = eventlog.OpenPostgresReadPool(opts.DSN)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var before int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sealed_by_key`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			// Back to the schema before 00023: the later migrations
			// undone too (00025 changes PostgreSQL's schema only; 00026
			// dropped an index of blob addresses; 00027 reordered
			// PostgreSQL's sessions columns, which nothing sees; 00028
			// indexed the runs not finished).
			undo := []string{`DROP TABLE sealed_by_key`, `CREATE INDEX blobs_address ON blobs (substr(hash, 1, 64))`, `DROP INDEX runs_unfinished`,
				`DELETE FROM goose_db_version WHERE version_id >= 23`}
			if opts.DSN != "" {
				undo = append(undo, `DROP TRIGGER store_meta_erase_generation ON store_meta`,
					`DROP FUNCTION rath_erase_generation_to_lock()`, `ALTER TABLE chain_lock DROP COLUMN erase_generation`)
			}
			for _, q := range undo {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := migrations.Up(ctx, db); err != nil {
				t.Fatal(err)
			}
			var after int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sealed_by_key`).Scan(&after); err != nil {
				t.Fatal(err)
			}
			// alice's first session, model call, placement, fork and
			// memory are under the destroyed key (no rows); the model
			// call, the fork of her fork and the merge under her new one;
			// bob's session and its fork.
			if before != 5 || after != before {
				t.Errorf("sealed_by_key held %d rows, %d after the migrations refilled it; want 5", before, after)
			}
			rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Failure != nil {
				t.Fatalf("verify after the erasure: %v", rep.Failure)
			}
			if _, err := rt.Rebuild(context.WithoutCancel(ctx), nil); err != nil {
				t.Fatalf("rebuild after the erasure: %v", err)
			}
		})
	}
}

// openSealed opens a runtime with a key-encryption key on backend
// ("sqlite", or "postgres": a throwaway server of its own), closed and
// stopped when the test ends.
func openSealed(t *testing.T, backend string) (*rath.Runtime, rath.Options) {
	t.Helper()
	opts := rath.Options{Dir: t.TempDir(), KEK: keyringtest.KEK(t)}
	if backend == "postgres" {
		srv, err := pgtest.Start(t.Context(), pgtest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Stop() })
		if opts.DSN, err = srv.CreateDatabase(t.Context(), "sealed"); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := rath.OpenWith(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, opts
}
