package eventlog_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/migrations"
)

// A store path is a path: characters that mean something in a URI name
// that file and no other, and the file is where the path says.
func TestDSN_PathsAreEscaped(t *testing.T) {
	tests := []struct{ name, dir string }{
		{"question mark", "we?ird"},
		{"hash", "we#ird"},
		{"percent escape", "we%20ird"},
		{"percent alone", "100%"},
		{"space", "we ird"},
		{"unicode", "wéird-目录"},
		{"ampersand and equals", "a&b=c"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			root := t.TempDir()
			dir := filepath.Join(root, tt.dir)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "rath.db")
			db, err := sql.Open("sqlite", eventlog.DSN(path, false, "journal_mode(WAL)"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := migrations.Up(ctx, db); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s, err := eventlog.Open(ctx, eventlog.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "local")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the database is not at %q: %v", path, err)
			}
			// Nothing else was created next to the directory or inside it.
			for _, d := range []string{root, dir} {
				entries, _ := os.ReadDir(d)
				for _, e := range entries {
					if n := e.Name(); n != tt.dir && n != "rath.db" && n != "rath.db-wal" && n != "rath.db-shm" && n != "rath.db"+eventlog.WriteGateSuffix && n != "rath.db"+migrations.LockSuffix {
						t.Errorf("stray file %q in %s", n, d)
					}
				}
			}
			// Reopened from the path, the event is there.
			s, err = eventlog.Open(context.Background(), eventlog.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if h, err := s.Head(ctx); err != nil || h.Seq != 1 {
				t.Fatalf("head = %v, %v", h, err)
			}
		})
	}
}

// TestOpen_ReadMmap: read connections map the database file as configured
// (the default, a chosen size, or not at all when negative).
func TestOpen_ReadMmap(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  int64
		want int64
	}{
		{"default", 0, eventlog.DefaultReadMmapBytes},
		{"chosen", 64 << 20, 64 << 20},
		{"off", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := MustOpenStore(t, eventlog.Options{ReadMmapBytes: tc.opt})
			var got int64
			if err := s.DB().QueryRowContext(context.Background(), `PRAGMA mmap_size`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("mmap_size on a read connection = %d, want %d", got, tc.want)
			}
		})
	}
}
