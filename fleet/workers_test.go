package fleet_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
)

// The workers listing names, for each worker, the runs it holds a live
// lease on and that are queued or running: not a run waiting for a
// person, a finished one, or one whose lease lapsed.
func TestWorkers_ListTheRunsEachHolds(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	db, err := sql.Open("sqlite", eventlog.DSN(filepath.Join(dir, rath.DBFile), false, "busy_timeout(10000)"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UnixNano()
	for _, w := range []string{"w1", "w2"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO fleet_workers (id, queue, concurrency, lease_ms, dead_after_ms, started_at, heartbeat_at) VALUES (?, 'default', 4, 15000, 60000, ?, ?)`, w, now, now); err != nil {
			t.Fatal(err)
		}
	}
	far := time.Now().Add(time.Hour).UnixNano()
	for _, p := range []events.Payload{
		events.RunStarted{Run: "running", Workflow: "wf", InputSession: "in-1", Seed: "s"},
		events.RunLeased{Run: "running", Worker: "w1", Token: 1, ExpiresAt: far},
		events.RunStarted{Run: "waiting", Workflow: "wf", InputSession: "in-2", Seed: "s"},
		events.RunLeased{Run: "waiting", Worker: "w1", Token: 1, ExpiresAt: far},
		events.ApprovalRequested{ID: "ap-1", Run: "waiting", Session: "in-2", Kind: "question", Question: "go on?"},
		events.RunStarted{Run: "finished", Workflow: "wf", InputSession: "in-3", Seed: "s"},
		events.RunLeased{Run: "finished", Worker: "w2", Token: 1, ExpiresAt: far},
		events.RunFinished{Run: "finished", Status: "ok"},
		events.RunStarted{Run: "lapsed", Workflow: "wf", InputSession: "in-4", Seed: "s"},
		events.RunLeased{Run: "lapsed", Worker: "w2", Token: 1, ExpiresAt: 10},
	} {
		if _, err := rt.Store().Append(ctx, p.(interface{ StreamID() string }).StreamID(), eventlog.AnyVersion, p); err != nil {
			t.Fatalf("append %T: %v", p, err)
		}
	}
	ws, err := fleet.Workers(ctx, rt, true)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string][]string{}
	for _, w := range ws {
		held[w.ID] = w.Runs
	}
	if len(ws) != 2 || !slices.Equal(held["w1"], []string{"running"}) || len(held["w2"]) != 0 {
		t.Fatalf("workers %+v: want w1 holding running, w2 nothing", ws)
	}
}
