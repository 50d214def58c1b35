package pgtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) {
	if os.Getenv(leaveEnv) != "" {
		os.Exit(leaveAServer())
	}
	pgtest.Main(m, func(s *pgtest.Server) { pg = s })
}

func TestServer_CreateDatabaseAndExec(t *testing.T) {
	ctx := context.Background()
	dsn, err := pg.CreateDatabase(ctx, "pgtest_create")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dsn, "127.0.0.1") || !strings.HasSuffix(dsn, "/pgtest_create?sslmode=disable") {
		t.Errorf("DSN = %q", dsn)
	}
	if err := pg.Exec(ctx, "pgtest_create", "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Exec(ctx, "pgtest_create", "SELECT nope FROM t"); err == nil {
		t.Error("a bad statement reported no error")
	}
}

func TestServer_KillAndRestartKeepData(t *testing.T) {
	ctx := context.Background()
	if _, err := pg.CreateDatabase(ctx, "pgtest_restart"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Exec(ctx, "pgtest_restart", "CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	pg.Kill()
	if err := pg.Exec(ctx, "pgtest_restart", "SELECT 1"); err == nil {
		t.Fatal("a killed server answered")
	}
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.Exec(ctx, "pgtest_restart", "DO $$ BEGIN IF (SELECT x FROM kept) <> 7 THEN RAISE 'lost'; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
}

func TestStart_MissingBinariesIsAnError(t *testing.T) {
	_, err := pgtest.Start(context.Background(), pgtest.Options{BinDir: t.TempDir()})
	if err == nil {
		t.Fatal("no error from a directory without PostgreSQL")
	}
	if _, statErr := os.Stat(t.TempDir()); statErr != nil {
		t.Fatal(statErr)
	}
}

// A template is prepared once, however many tests ask for copies at once,
// and each copy holds what preparing wrote.
func TestTemplate_PreparesOnceAndCopies(t *testing.T) {
	var prepared atomic.Int64
	tp := pg.Template("pgtest_tpl", func(ctx context.Context, dsn string) error {
		prepared.Add(1)
		if !strings.HasSuffix(dsn, "/pgtest_tpl?sslmode=disable") {
			t.Errorf("prepare got DSN %q", dsn)
		}
		return pg.Exec(ctx, "pgtest_tpl", "CREATE TABLE marks (x int); INSERT INTO marks VALUES (42)")
	})
	names := make([]string, 3)
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names[i], _ = tp.New(t)
		}()
	}
	wg.Wait()
	if got := prepared.Load(); got != 1 {
		t.Fatalf("prepared %d times, want once", got)
	}
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Fatalf("copy %s made twice: %v", name, names)
		}
		seen[name] = true
		if err := pg.Exec(t.Context(), name, "DO $$ BEGIN IF (SELECT x FROM marks) <> 42 THEN RAISE 'not a copy'; END IF; END $$"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A template that cannot be prepared fails every test that asks for a copy.
func TestTemplate_PrepareErrorFails(t *testing.T) {
	tp := pg.Template("pgtest_badtpl", func(context.Context, string) error { return errors.New("no schema") })
	for range 2 {
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			tp.New(ft)
		}()
		if !strings.Contains(ft.msg, "no schema") {
			t.Fatalf("New reported %q, want the preparation's error", ft.msg)
		}
	}
}

// fatalRecorder keeps what Fatal was called with and stops there, as
// testing.T's Fatal does, without failing the test it wraps.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(f)
}
