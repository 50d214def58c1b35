//go:build integration

package retention_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
)

var (
	pg    *pgtest.Server
	pgDBs atomic.Int64
)

// One PostgreSQL server for the package's tests on that store.
func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }, built.Remove) }

// bothStores are the stores every test of redaction and retention runs on.
var bothStores = []string{"sqlite", "postgres"}

// storeFlags returns the global flags of a fresh store of backend: a
// directory, and for postgres a database of its own on the package's
// server (with the directory for per-process files).
func storeFlags(t *testing.T, backend string) []string {
	t.Helper()
	dir := t.TempDir()
	if backend != "postgres" {
		return []string{"--dir", dir}
	}
	dsn, err := pg.CreateDatabase(t.Context(), fmt.Sprintf("retention%d", pgDBs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--dir", dir, "--dsn", dsn}
}
