package storetest_test

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// Each of a store's connections tells the server what it is for
// (application_name, in pg_stat_activity and the server's log), unless
// the operator's DSN names the application: then the operator's name is
// on all of them.
func TestPostgres_ConnectionsSayWhatTheyAreFor(t *testing.T) {
	t.Parallel()
	tg := postgresTarget(t)
	ownName, err := url.Parse(tg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	q := ownName.Query()
	q.Set("application_name", "ops-console")
	kek := keyringtest.KEK(t)
	ownName.RawQuery = q.Encode()
	for _, tt := range []struct {
		name, dsn string
		want      []string
	}{
		{"rath's names", tg.DSN, []string{eventlog.AppKeys, eventlog.AppListen, eventlog.AppReads, eventlog.AppTree, eventlog.AppWriter}},
		{"the DSN's name", ownName.String(), []string{"ops-console"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s, err := eventlog.Open(ctx, eventlog.Options{DSN: tt.dsn,
				Sealer: keyring.New(kek, func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// An append sealed under its session's key (the writer, the keys' pool,
			// the tree builder), a read, and a waiter (the listener).
			p := events.ChunkAppended{Session: "s1", Index: 0, Chunk: events.Chunk{Role: "user", Content: "hello"}}
			if _, err := s.Append(ctx, "s1", eventlog.AnyVersion, p); err != nil {
				t.Fatal(err)
			}
			if err := s.SyncTree(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Head(ctx); err != nil {
				t.Fatal(err)
			}
			s.Notify()
			var got []string
			for deadline := time.Now().Add(10 * time.Second); ; {
				got = nil
				if err := s.DB().SelectContext(ctx, &got, `SELECT DISTINCT application_name FROM pg_stat_activity
					WHERE datname = current_database() AND backend_type = 'client backend' ORDER BY 1`); err != nil {
					t.Fatal(err)
				}
				// The listener dials in the background.
				if slices.Equal(got, tt.want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("the store's connections are named %q, want %q", got, tt.want)
			}
		})
	}
}
