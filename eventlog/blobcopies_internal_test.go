package eventlog

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/queryplan"
	"github.com/gorath/rath/migrations"
)

// migratedSQLite returns a path to a new SQLite store with its schema.
func migratedSQLite(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rath.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Up(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return path
}

var searchesTheKey = regexp.MustCompile(`SEARCH (b|blobs) USING (COVERING )?INDEX sqlite_autoindex_blobs_1 \(hash>\? AND hash<\?\)`)

// The statements that read an address's copies are range scans of the
// blobs table's primary key: no other index serves them.
func TestBlobCopies_StatementsSearchThePrimaryKey(t *testing.T) {
	s, err := Open(t.Context(), Options{Path: migratedSQLite(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{copiesOfAddress, anyCopyOfAddress, deleteCopiesOfAddress, copiesOfAddresses(3)} {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = "x"
		}
		plan, err := queryplan.SQLite(t.Context(), s.DB(), q, args...)
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(plan, "\n")
		if !searchesTheKey.MatchString(joined) || strings.Contains(joined, "SCAN b") || strings.Contains(joined, "SCAN blobs") {
			t.Errorf("%s\ndoes not search the primary key:\n%s", q, joined)
		}
	}
}

// An address's copies are the keys from the address to the address and
// "/": the rows of the addresses just before and after it, and of an
// address it is a prefix of, are not among them.
func TestBlobCopies_AreTheAddressRangeAndNoMore(t *testing.T) {
	path := migratedSQLite(t)
	s, err := Open(t.Context(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The rows are written on a connection of the test's: the store's
	// own read pool is read-only.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// An address whose last digit has neighbours on both sides.
	var addr string
	var content []byte
	for i := 0; ; i++ {
		content = fmt.Appendf(nil, "blob %d", i)
		if addr = BlobHash(content); addr[63] != '0' && addr[63] != 'f' && addr[63] != '9' && addr[63] != 'a' {
			break
		}
	}
	before := addr[:63] + string(addr[63]-1)
	after := addr[:63] + string(addr[63]+1)
	rows := map[string]string{
		addr:                   string(content),
		addr + ".k1":           "a sealed copy (as stored, unopened here)",
		before:                 "the address before",
		before + ".zzzz":       "a copy of the address before",
		after:                  "the address after",
		after + ".k1":          "a copy of the address after",
		addr[:63]:              "a key that is a prefix of the address",
		addr[:62] + "." + "k1": "a copy under a shorter key",
	}
	for k, v := range rows {
		if _, err := db.ExecContext(t.Context(), `INSERT INTO blobs (hash, size, bytes) VALUES (?, ?, ?)`, k, len(v), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	copies, err := s.blobCopies(t.Context(), s.rdb, addr)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range copies {
		keys = append(keys, c.key)
	}
	if got, want := strings.Join(keys, " "), addr+" "+addr+".k1"; got != want {
		t.Fatalf("copies of %s: %s\nwant %s", addr, got, want)
	}
	got, err := s.GetBlob(t.Context(), addr)
	if err != nil || string(got) != string(content) {
		t.Fatalf("GetBlob: %q, %v", got, err)
	}
	all, err := s.GetBlobs(t.Context(), []string{addr, strings.Repeat("0", 64)})
	if err != nil || len(all) != 1 || string(all[addr]) != string(content) {
		t.Fatalf("GetBlobs: %q, %v", all, err)
	}
	for _, missing := range []string{addr[:63] + "/", strings.Repeat("0", 64)} {
		if ok, err := s.HasBlob(t.Context(), missing); err != nil || ok {
			t.Errorf("HasBlob(%s) = %v, %v; no copy is stored under it", missing, ok, err)
		}
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if n, _, err := s.deleteCopies(t.Context(), tx, addr); err != nil || n != 2 {
		t.Fatalf("deleteCopies: %d rows, %v; want the address's 2", n, err)
	}
	var left int
	if err := tx.QueryRowContext(t.Context(), `SELECT count(*) FROM blobs`).Scan(&left); err != nil || left != len(rows)-2 {
		t.Fatalf("%d rows left (%v), want %d", left, err, len(rows)-2)
	}
}
