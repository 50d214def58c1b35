package rath_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/scratchopt"
	"github.com/gorath/rath/migrations"
	"github.com/gorath/rath/session"
)

// The runtime directory may hold any character: the database is created
// inside it, not at a path cut short at '?' or '#'.
func TestOpen_DirWithURICharacters(t *testing.T) {
	for _, name := range []string{"we?ird", "we#ird", "we%20ird", "we ird", "wéird"} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			root := t.TempDir()
			dir := filepath.Join(root, name)
			rt, err := rath.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.NewUserSession(ctx, "hello"); err != nil {
				t.Fatal(err)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, rath.DBFile)); err != nil {
				t.Fatalf("database not in %q: %v", dir, err)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 1 {
				t.Fatalf("%s holds %d entries, want only %q", root, len(entries), name)
			}
		})
	}
}

// A store migrated by a newer rath is refused at open, naming both schema
// versions, and nothing is written to it.
func TestOpen_RefusesANewerSchema(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	path := filepath.Join(dir, rath.DBFile)
	db, err := sql.Open("sqlite", eventlog.DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, migrations.Latest()+1); err != nil {
		t.Fatal(err)
	}
	_, err = rath.Open(ctx, dir)
	var tooNew *migrations.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Database != migrations.Latest()+1 || tooNew.Binary != migrations.Latest() {
		t.Fatalf("open = %v, want a *SchemaTooNewError", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("events = %d, %v; want none", n, err)
	}
}

// An in-memory store opened WithoutReadIndexes has no run or type index
// on the log, and still answers reads by run and by type; a store that is
// kept refuses the option.
func TestOpen_WithoutReadIndexes(t *testing.T) {
	ctx := t.Context()
	indexes := func(rt *rath.Runtime) []string {
		t.Helper()
		var names []string
		if err := rt.Store().DB().SelectContext(ctx, &names, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND name IN ('events_run', 'events_type') ORDER BY name`); err != nil {
			t.Fatal(err)
		}
		return names
	}
	for _, lean := range []bool{false, true} {
		rt, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), Store: rath.StoreOptions{InMemory: true}, Scratch: scratchopt.Options{WithoutReadIndexes: lean}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		if got, want := len(indexes(rt)), map[bool]int{false: 2, true: 0}[lean]; got != want {
			t.Fatalf("WithoutReadIndexes=%v: %d of the read indexes, want %d", lean, got, want)
		}
		run := rt.Sessions().In(eventlog.Scope{Run: events.RunRef{ID: "r1"}})
		for _, m := range []*session.Manager{run, rt.Sessions(), run} {
			if _, err := m.New(ctx, session.OriginUser, session.Chunk{Role: events.RoleUser, Content: "hello"}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := rt.Store().Read(ctx, eventlog.Query{})
		if err != nil {
			t.Fatal(err)
		}
		var inRun, created []int64
		for _, ev := range all {
			if ev.RunID == "r1" {
				inRun = append(inRun, ev.Seq)
			}
			if ev.Type == events.TypeSessionCreated {
				created = append(created, ev.Seq)
			}
		}
		seqs := func(evs []events.Event, err error) []int64 {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, ev := range evs {
				out = append(out, ev.Seq)
			}
			return out
		}
		if got := seqs(rt.Store().ReadRun(ctx, "r1")); len(inRun) == 0 || !slices.Equal(got, inRun) {
			t.Fatalf("WithoutReadIndexes=%v: ReadRun = seqs %v, want %v", lean, got, inRun)
		}
		if got := seqs(rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeSessionCreated}})); len(created) != 3 || !slices.Equal(got, created) {
			t.Fatalf("WithoutReadIndexes=%v: read by type = seqs %v, want %v", lean, got, created)
		}
	}
	if _, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), Scratch: scratchopt.Options{WithoutReadIndexes: true}}); err == nil {
		t.Fatal("a file store opened WithoutReadIndexes")
	}
}
