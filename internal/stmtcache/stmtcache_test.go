package stmtcache_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite"

	"github.com/gorath/rath/internal/stmtcache"
)

func openDB(t *testing.T) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := db.Exec(`INSERT INTO kv VALUES (?, ?)`, fmt.Sprint("k", i), i); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestCache: each way of querying returns what the database holds, the
// same through a kept statement as the first time, sees later writes,
// and reports a bad query's own error.
func TestCache(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	c := stmtcache.New(db)
	for round := range 2 {
		var v int
		if err := c.GetContext(ctx, &v, `SELECT v FROM kv WHERE k = ?`, "k3"); err != nil || v != 3 {
			t.Fatalf("round %d: get = %d, %v", round, v, err)
		}
		var vs []int
		if err := c.SelectContext(ctx, &vs, `SELECT v FROM kv WHERE v >= ? ORDER BY v`, 2); err != nil || len(vs) != 3+round {
			t.Fatalf("round %d: select = %v, %v", round, vs, err)
		}
		if err := c.QueryRowContext(ctx, `SELECT v FROM kv WHERE k = ?`, "k4").Scan(&v); err != nil || v != 4 {
			t.Fatalf("round %d: query row = %d, %v", round, v, err)
		}
		rows, err := c.QueryContext(ctx, `SELECT k FROM kv ORDER BY k`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if n != 5+round {
			t.Fatalf("round %d: query = %d rows", round, n)
		}
		if _, err := db.Exec(`INSERT INTO kv VALUES ('k9', 9)`); err != nil && round == 0 {
			t.Fatal(err)
		}
	}
	var v int
	if err := c.GetContext(ctx, &v, `SELECT nope FROM kv`); err == nil {
		t.Fatal("a bad query did not fail")
	}
}

// TestCache_Full: past MaxStatements, queries still run (unprepared).
func TestCache_Full(t *testing.T) {
	ctx := context.Background()
	c := stmtcache.New(openDB(t))
	for i := range stmtcache.MaxStatements + 10 {
		var v int
		if err := c.GetContext(ctx, &v, fmt.Sprintf(`SELECT %d`, i)); err != nil || v != i {
			t.Fatalf("query %d = %d, %v", i, v, err)
		}
	}
}

// TestCache_Concurrent: many goroutines through the same statements see
// the same rows (run with -race).
func TestCache_Concurrent(t *testing.T) {
	ctx := context.Background()
	c := stmtcache.New(openDB(t))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % 5
				var v int
				if err := c.GetContext(ctx, &v, `SELECT v FROM kv WHERE k = ?`, fmt.Sprint("k", k)); err != nil || v != k {
					t.Errorf("k%d = %d, %v", k, v, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
