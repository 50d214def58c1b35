//go:build integration

package keyring_test

import (
	"database/sql"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/migrations"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }) }

func TestKeyring_Postgres(t *testing.T) {
	dsn, err := pg.CreateDatabase(t.Context(), "keyring")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := migrations.Up(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	keyringTests(t, db, func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })
}
