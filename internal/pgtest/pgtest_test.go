package pgtest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }) }

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
