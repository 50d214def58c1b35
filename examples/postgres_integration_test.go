//go:build integration

package examples_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
)

// pg is one throwaway PostgreSQL server for the test binary, started by
// the first test that needs it and stopped by TestMain.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
	n    atomic.Int64
}

// postgresStore returns the flags of a fresh, empty PostgreSQL store
// (rath copy creates its schema). A server that cannot start fails the
// test: it does not skip.
func postgresStore(t *testing.T) []string {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Start(context.Background(), pgtest.Options{}) })
	if pg.err != nil {
		t.Fatalf("PostgreSQL for the tests: %v", pg.err)
	}
	dsn, err := pg.srv.CreateDatabase(t.Context(), fmt.Sprintf("examples%d", pg.n.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--dir", t.TempDir(), "--dsn", dsn}
}

func stopPostgres() {
	if pg.srv != nil {
		pg.srv.Stop()
	}
}
