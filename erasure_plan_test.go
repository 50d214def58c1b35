package rath

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/queryplan"
)

// Every statement an erasure runs finds its rows through an index, on
// both stores, so an erasure costs the same on a store of a million
// events as on a small one. The plans are read without data: SQLite's
// for unbound parameters, PostgreSQL's generic plan with sequential scans
// priced out, as a plan for a bound parameter may not use a partial
// index (runs_subject holds only the runs that name a subject).
func TestErase_StatementsUseIndexes(t *testing.T) {
	stmts := erasureStatements()
	t.Run("SQLite", func(t *testing.T) {
		rt, err := OpenWith(t.Context(), Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		for _, q := range stmts {
			plan := sqlitePlan(t, rt.store.DB().DB, q)
			for _, line := range plan {
				if strings.HasPrefix(line, "SCAN ") && line != "SCAN CONSTANT ROW" {
					t.Errorf("%s\nscans a table:\n%s", oneLine(q), strings.Join(plan, "\n"))
					break
				}
			}
		}
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		ctx := t.Context()
		srv, err := pgtest.Start(ctx, pgtest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		dsn, err := srv.CreateDatabase(ctx, "plans")
		if err != nil {
			t.Fatal(err)
		}
		rt, err := OpenWith(ctx, Options{Dir: t.TempDir(), DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		db := rt.store.DB()
		conn, err := db.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, set := range []string{`SET plan_cache_mode = force_generic_plan`, `SET enable_seqscan = off`} {
			if _, err := conn.ExecContext(ctx, set); err != nil {
				t.Fatal(err)
			}
		}
		for i, q := range stmts {
			plan := postgresPlan(t, ctx, conn, i, db.Rebind(q))
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s\nscans a table:\n%s", oneLine(q), plan)
			}
		}
	})
}

func sqlitePlan(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	args := make([]any, strings.Count(q, "?"))
	for i := range args {
		args[i] = "x"
	}
	plan, err := queryplan.SQLite(t.Context(), db, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", oneLine(q), err)
	}
	return plan
}

var pgParam = regexp.MustCompile(`\$\d+`)

// postgresPlan prepares q (its parameters' types inferred) and explains
// its execution with every parameter 'x', or 0 where a number.
func postgresPlan(t *testing.T, ctx context.Context, conn *sql.Conn, i int, q string) string {
	t.Helper()
	name := fmt.Sprintf("erase_%d", i)
	if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+q); err != nil {
		t.Fatalf("%s: %v", oneLine(q), err)
	}
	var types string
	if err := conn.QueryRowContext(ctx, `SELECT array_to_string(parameter_types, ',') FROM pg_prepared_statements WHERE name = $1`, name).Scan(&types); err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, typ := range strings.Split(types, ",") {
		switch typ {
		case "bigint", "integer", "smallint":
			vals = append(vals, "0")
		default:
			vals = append(vals, "'x'")
		}
	}
	args := strings.Join(vals[:len(pgParam.FindAllString(q, -1))], ", ")
	plan, err := queryplan.Postgres(ctx, conn, `EXECUTE `+name+`(`+args+`)`)
	if err != nil {
		t.Fatalf("%s: %v", oneLine(q), err)
	}
	return strings.Join(plan, "\n") + "\n"
}

func oneLine(q string) string { return strings.Join(strings.Fields(q), " ") }
