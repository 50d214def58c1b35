package storetest

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/retention"
)

// recordRun records one finished run whose answer is big, so its payloads
// are most of what the store holds.
func recordRun(t *testing.T, rt *rath.Runtime, prompt string, size int) (*rath.Run, flow.Workflow) {
	t.Helper()
	ctx := t.Context()
	answer := strings.Repeat(prompt+" is a city. ", size/12+1)[:size]
	agent, err := flow.NewAgent("Answer.", flow.Scripted(scripted.Entry{Content: answer}))
	if err != nil {
		t.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "geo", agent, input)
	if err != nil {
		t.Fatal(err)
	}
	return run, agent
}

// Retention archives finished runs, deletes their payloads and keeps
// their proof: the store verifies (listing the redaction), each archive
// verifies alone against a head the live tree still has, a replay says
// what it could not check, and running runs and runs a live session
// descends from are left alone.
func testRetention(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	rt := open(t, tg)
	old, agent := recordRun(t, rt, "Paris", 200_000)
	forked, _ := recordRun(t, rt, "Lyon", 2_000)
	newest, _ := recordRun(t, rt, "Nice", 2_000)
	// A live session descends from forked's output.
	if _, err := forked.Output.Fork(ctx); err != nil {
		t.Fatal(err)
	}
	// A run still running: started, never finished.
	running := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: "run-still-going", Seed: "s"}})
	if _, err := running.Append(ctx, "run-still-going", eventlog.NoStream, events.RunStarted{Run: "run-still-going", Workflow: "geo", Seed: "s"}); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	dry, err := retention.Retain(ctx, rt, retention.Options{CompletedBefore: future, KeepLast: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(dry.Runs, ",") != old.ID || len(dry.Skipped) != 1 || dry.Skipped[0].Run != forked.ID {
		t.Fatalf("dry run = %+v, want %s retained and %s skipped (%s kept as the newest)", dry, old.ID, forked.ID, newest.ID)
	}
	if reds, _ := rt.Store().Redactions(ctx); len(reds) != 0 {
		t.Fatalf("the dry run redacted %d events", len(reds))
	}
	sqlitePath := filepath.Join(tg.Dir, rath.DBFile)
	vacuumSize := func() int64 {
		if tg.DSN != "" {
			return 0
		}
		db, err := sql.Open("sqlite", eventlog.DSN(sqlitePath, false))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// In WAL mode VACUUM writes the WAL; the checkpoints move it into
		// the file, and TRUNCATE empties the WAL.
		for _, q := range []string{`PRAGMA wal_checkpoint(TRUNCATE)`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		fi, err := os.Stat(sqlitePath)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	sizeBefore := vacuumSize()
	archive := t.TempDir()
	rep, err := retention.Retain(ctx, rt, retention.Options{CompletedBefore: future, KeepLast: 1, ArchiveTo: archive})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Runs, ",") != old.ID || rep.ArchivedBytes < 200_000 || rep.PayloadBytes == 0 {
		t.Fatalf("retain = %+v, want %s archived (at least 200000 bytes)", rep, old.ID)
	}
	if tg.DSN == "" {
		shrunk := sizeBefore - vacuumSize()
		t.Logf("archived %d payload bytes; the store shrank by %d bytes after VACUUM", rep.ArchivedBytes, shrunk)
		if shrunk*10 < rep.ArchivedBytes*9 {
			t.Fatalf("the store shrank by %d bytes, less than 90%% of the %d archived payload bytes", shrunk, rep.ArchivedBytes)
		}
	}
	vr := MustVerify(t, rt.Store())
	if len(vr.Redactions) == 0 || vr.Redactions[0].Reason != retention.ReasonRetention {
		t.Fatalf("verify lists %v, want the retention's redactions", vr.Redactions)
	}
	if v, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !v.OK() {
		t.Fatalf("verify with the projections: %v %v", v.Failure, err)
	}
	// The archive verifies alone, against a head the live tree still has.
	dir := filepath.Join(archive, old.ID)
	verified, err := retention.VerifyArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	head := verified.Head
	if live, err := rt.Store().TreeHeadAt(ctx, head.Size); err != nil || live != head {
		t.Fatalf("the live tree at %d is %v (%v), the archive's head %v", head.Size, live, err, head)
	}
	payloads := filepath.Join(dir, retention.ArchivePayloads)
	b2, err := os.ReadFile(payloads)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(payloads, []byte(strings.Replace(string(b2), "Paris is", "Paris was", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := retention.VerifyArchive(dir); !errors.Is(err, retention.ErrArchive) || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("an edited archive: %v, want ErrArchive naming the payload", err)
	}
	// The run is still listed; a replay says what it could not check.
	if r, err := rt.Reader().Run(ctx, old.ID); err != nil || r.Status != rath.RunOK {
		t.Fatalf("the retained run reads as %+v, %v", r, err)
	}
	rr, err := replay.Run(ctx, rt, old.ID, agent)
	if err != nil {
		t.Fatal(err)
	}
	if !rr.OK() || len(rr.Redacted) == 0 || !strings.Contains(rr.Verdict(), "could not be checked") {
		t.Fatalf("replay of the retained run = %+v (%s)", rr, rr.Verdict())
	}
	// Nothing left to retain; the running run and the forked one untouched.
	again, err := retention.Retain(ctx, rt, retention.Options{CompletedBefore: future, KeepLast: 1, ArchiveTo: archive})
	if err != nil || len(again.Runs) != 0 {
		t.Fatalf("a second retain = %+v, %v; want nothing to do", again, err)
	}
	for _, run := range []string{forked.ID, newest.ID, "run-still-going"} {
		if red, err := rt.Store().RedactedInRun(ctx, run, 0); err != nil || len(red) != 0 {
			t.Fatalf("run %s: %d events redacted (%v), want none", run, len(red), err)
		}
	}
}
