package storetest_test

import (
	"fmt"
	"os"
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

func postgresTarget(t testing.TB) storetest.Target {
	name := fmt.Sprintf("conf%d", dbs.Add(1))
	dsn, err := server.CreateDatabase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(t testing.TB, q string) error { return server.Exec(t.Context(), name, q) }
	return storetest.Target{
		Dir:  t.TempDir(),
		DSN:  dsn,
		Exec: exec,
		DropGuards: func(t testing.TB) {
			if err := exec(t, `ALTER TABLE events DISABLE TRIGGER USER`); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestConformance_Postgres(t *testing.T) {
	storetest.Run(t, storetest.Backend{Name: "postgres", New: postgresTarget})
}
