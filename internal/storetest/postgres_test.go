package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/storetest"
)

var (
	server *pgtest.Server
	dbs    atomic.Int64
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(appender(spec))
	}
	pgtest.Main(m, func(s *pgtest.Server) { server = s })
}

// migrated is a database at rath's latest schema that the conformance
// suite's databases are copied from: its many cases each get a fresh
// database without running every migration again.
var migrated struct {
	once sync.Once
	name string
	err  error
}

func migratedTemplate(ctx context.Context) (string, error) {
	migrated.once.Do(func() {
		migrated.name = "conf_template"
		dsn, err := server.CreateDatabase(ctx, migrated.name)
		if err == nil {
			err = rath.Migrate(ctx, dsn) // closes its connections: a template must have none
		}
		migrated.err = err
	})
	return migrated.name, migrated.err
}

func postgresTarget(t testing.TB) storetest.Target {
	name := fmt.Sprintf("conf%d", dbs.Add(1))
	template, err := migratedTemplate(context.WithoutCancel(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := server.CreateDatabaseFrom(t.Context(), name, template)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(t testing.TB, q string) error { return server.Exec(t.Context(), name, q) }
	return storetest.Target{
		Dir:  t.TempDir(),
		DSN:  dsn,
		Exec: exec,
		Files: func(t testing.TB) []string {
			if err := exec(t, `CHECKPOINT`); err != nil {
				t.Fatal(err)
			}
			var files []string
			filepath.WalkDir(server.DataDir(), func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					files = append(files, path)
				}
				return nil
			})
			return files
		},
		DropGuards: func(t testing.TB) {
			for _, q := range []string{`ALTER TABLE events DISABLE TRIGGER USER`, `ALTER TABLE tree_hashes DISABLE TRIGGER USER`, `ALTER TABLE redactions DISABLE TRIGGER USER`} {
				if err := exec(t, q); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
}

func TestConformance_Postgres(t *testing.T) {
	storetest.Run(t, storetest.Backend{Name: "postgres", New: postgresTarget})
}

// Memory in a cluster: what one process remembers, another (its own
// index in its own directory) recalls, caught up from the shared log.
func TestPostgres_MemoryAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tg := postgresTarget(t)
	open := func() *rath.Runtime {
		rt, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), DSN: tg.DSN})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return rt
	}
	a, b := open(), open()
	ma, err := a.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"the deploy key rotates on mondays", "staging runs postgres fifteen"} {
		if _, err := ma.Remember(ctx, "ops", text, nil); err != nil {
			t.Fatal(err)
		}
		hits, err := mb.Recall(ctx, "ops", strings.Fields(text)[1]+" "+strings.Fields(text)[2], 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].Text != text {
			t.Fatalf("memory %d: the other process recalled %+v", i, hits)
		}
	}
	// The other process's background indexer caught up too (woken by
	// NOTIFY), not only the recall that waited for it.
	deadline := time.Now().Add(10 * time.Second)
	head, _ := b.Store().Head(ctx)
	for mb.Checkpoint() < head.Seq {
		if time.Now().After(deadline) {
			t.Fatalf("the other index is at seq %d, the log at %d", mb.Checkpoint(), head.Seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A subscriber whose connections the server drops (a restart, a
// failover, an operator's pg_terminate_backend) resumes from its last
// seq: it misses nothing and repeats nothing.
func TestPostgres_SubscriberSurvivesDroppedConnections(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	name := fmt.Sprintf("conf%d", dbs.Add(1))
	dsn, err := server.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	tg := storetest.Target{Dir: t.TempDir(), DSN: dsn}
	reader, writer := storetest.OpenStore(t, tg), storetest.OpenStore(t, tg)
	got := make(chan int64, 100)
	go func() {
		for ev, err := range reader.Subscribe(ctx, eventlog.Query{}) {
			if err != nil {
				t.Errorf("subscriber: %v", err)
				return
			}
			got <- ev.Seq
		}
	}()
	want := int64(1)
	for round := range 4 {
		for i := range 3 {
			if _, err := writer.Append(ctx, "s", eventlog.AnyVersion, &events.SessionPlaced{Session: "s", Backend: "local", Spec: fmt.Sprint(round, i)}); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			select {
			case seq := <-got:
				if seq != want {
					t.Fatalf("round %d: subscriber got seq %d, want %d", round, seq, want)
				}
				want++
			case <-ctx.Done():
				t.Fatalf("round %d: subscriber waited for seq %d in vain", round, want)
			}
		}
		// Drop every connection to the database but psql's own.
		if err := server.Exec(ctx, "postgres", fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()`, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// A read pool handed to eventlog.Open is the store's: its reads go through
// it, and Close closes it, as does an Open that fails, whatever the reason.
func TestPostgresReadPool_IsTakenOverByTheStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	target := postgresTarget(t)
	open := func(opts eventlog.Options) (*eventlog.Store, *sql.DB, error) {
		t.Helper()
		pool, err := eventlog.OpenPostgresReadPool(target.DSN)
		if err != nil {
			t.Fatal(err)
		}
		opts.PostgresReadPool = pool
		s, err := eventlog.Open(ctx, opts)
		return s, pool, err
	}
	s, pool, err := open(eventlog.Options{DSN: target.DSN})
	if err != nil {
		t.Fatal(err)
	}
	if s.DB().DB != pool {
		t.Error("the store reads through a pool of its own, not the one it was given")
	}
	if _, err := s.Append(ctx, "s1", eventlog.NoStream, events.SessionCreated{Session: "s1", Origin: "user"}); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.ReadStream(ctx, "s1", 0); err != nil || len(evs) != 1 {
		t.Fatalf("read back through the pool: %d events, %v", len(evs), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("the pool after the store closed: %v, want it closed", err)
	}
	for name, opts := range map[string]eventlog.Options{
		"no DSN":           {Path: filepath.Join(t.TempDir(), "rath.db")},
		"bad option":       {DSN: target.DSN, Synchronous: "SOMETIMES"},
		"server not there": {DSN: "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"},
	} {
		if _, pool, err := open(opts); err == nil {
			t.Errorf("%s: Open succeeded", name)
		} else if perr := pool.PingContext(ctx); perr == nil || !strings.Contains(perr.Error(), "closed") {
			t.Errorf("%s: Open failed (%v) and left the pool open (%v)", name, err, perr)
		}
	}
}

// An exclusive transaction (a redaction, a rebuild) that cannot take the
// chain lock in time fails with an error; it never leaves the writer
// without a connection to reload from, which crashed the process. The
// store's statements time out after 300 ms here, and another connection
// holds the lock.
func TestPostgres_ExclusiveSurvivesALockTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	target := postgresTarget(t)
	dsn := target.DSN
	target.DSN += "&statement_timeout=300"
	s := storetest.OpenStore(t, target)
	if _, err := s.Append(ctx, "s", eventlog.AnyVersion, &events.SessionPlaced{Session: "s", Backend: "local", Spec: "first"}); err != nil {
		t.Fatal(err)
	}
	holder, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclusive(ctx, func(context.Context, *eventlog.Tx) error { return nil }); err == nil {
		t.Error("an exclusive transaction ran while another connection held the chain lock")

	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclusive(ctx, func(context.Context, *eventlog.Tx) error { return nil }); err != nil {
		t.Fatalf("exclusive once the lock is free: %v", err)
	}
	if _, err := s.Append(ctx, "s", eventlog.AnyVersion, &events.SessionPlaced{Session: "s", Backend: "local", Spec: "last"}); err != nil {
		t.Fatalf("append once the lock is free: %v", err)
	}
}
