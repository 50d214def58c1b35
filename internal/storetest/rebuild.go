package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/projections"
)

// A rebuild writes its rows in multi-row INSERTs (package projections):
// over a log with more rows of each table than one INSERT takes, the
// rebuilt tables equal the incrementally built ones row for row, and the
// store verifies.
func testRebuildInBulk(t *testing.T, b Backend) {
	ctx := t.Context()
	rt := open(t, b.New(t))
	AgentLog(t, rt, 240, 2)
	before := rebuildKeepsRows(t, rt)
	// More rows of sessions and of usage than one INSERT takes.
	for table, least := range map[string]int{"sessions": 300, "usage": 500, "session_snapshots": 3} {
		if got := len(before[table]); got < least {
			t.Fatalf("the log projects %d rows into %s, want at least %d", got, table, least)
		}
	}
	if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify after the rebuild = %v, %v", fmt.Sprint(rep.Failure), err)
	}
}

// A rebuild reads the log a page ahead with each page's blobs in one
// query, and decodes only the payloads the projector reads (package
// projections): over a log of more than one page with forks, merges,
// approvals, tool calls, payloads kept in blobs, sealed content, redacted
// events and an erased subject's, the rebuilt tables equal the
// incrementally built ones row for row.
func testRebuildReadsEveryKind(t *testing.T, b Backend) {
	ctx := t.Context()
	rt, _ := openSealed(t, b.New(t), keyringtest.KEK(t))
	s := rt.Store()
	AgentLog(t, rt, 50, 10) // forks, merges, provider and tool calls: two pages
	sess, err := rt.NewUserSession(ctx, "kept whole")
	if err != nil {
		t.Fatal(err)
	}
	id := sess.ID()
	big := strings.Repeat("a payload kept in blobs ", 1000)
	must := func(evs []events.Event, err error) []events.Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	// Tool calls up to a snapshot's version: the event a snapshot is
	// taken at is one whose payload the projector does not read.
	var calls []events.Payload
	for v := sess.Version() + 1; v <= projections.SnapshotEvery; v++ {
		calls = append(calls, &events.ToolCalled{Session: id, CallID: fmt.Sprint("v", v), Tool: "shell", Arguments: "ls"})
	}
	must(s.Append(ctx, id, sess.Version(), calls...))
	kept := must(s.Append(ctx, id, projections.SnapshotEvery,
		&events.ChunkAppended{Session: id, Index: 1, Chunk: events.Chunk{Role: "assistant", Content: big}},
		&events.ToolCalled{Session: id, CallID: "c1", Tool: "shell", Arguments: big},
		&events.ChunkAppended{Session: id, Index: 2, Chunk: events.Chunk{Role: "assistant", Content: "to redact"}},
		&events.ToolCalled{Session: id, CallID: "c2", Tool: "shell", Arguments: "to redact"}))
	// Content of a subject of its own, erased below: it reads as erased.
	alice := events.ContextWithSubject(ctx, "user:alice")
	must(s.Append(alice, id, eventlog.AnyVersion,
		&events.ChunkAppended{Session: id, Index: 3, Chunk: events.Chunk{Role: "user", Content: "alice's words"}},
		&events.ToolCalled{Session: id, CallID: "c3", Tool: "shell", Arguments: "alice's call"}))
	for i, decided := range []bool{true, false} {
		aid := fmt.Sprint("ap", i)
		evs := []events.Payload{&events.ApprovalRequested{ID: aid, Session: id, Kind: events.ApprovalTool, Tool: "shell", Arguments: "ls", ArgsHash: "h"}}
		if decided {
			evs = append(evs, &events.ApprovalDecided{ID: aid, Decision: events.DecisionApproved, By: "bob", ArgsHash: "h"})
		}
		must(s.Append(ctx, events.ApprovalStream(aid), eventlog.NoStream, evs...))
	}
	if _, err := s.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{kept[2].Seq, kept[3].Seq}, By: "dpo", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	// What the rebuild read: the payloads kept in blobs whole, alice's
	// content erased.
	var whole, gone int
	for ev, err := range s.Scan(ctx, eventlog.Query{Stream: id}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(ev.Payload), big) {
			whole++
		}
		if ev.Redacted && ev.Seq > kept[3].Seq {
			gone++
		}
	}
	if whole != 2 || gone != 2 {
		t.Fatalf("read %d payloads whole from blobs and %d erased, want 2 and 2", whole, gone)
	}
	before := rebuildKeepsRows(t, rt)
	if len(before["approvals"]) != 2 || !strings.Contains(fmt.Sprint(before["session_snapshots"]), id) {
		t.Fatalf("the log projects %d approvals and no snapshot of %s, want 2 and one", len(before["approvals"]), id)
	}
	if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify after the rebuild = %v, %v", fmt.Sprint(rep.Failure), err)
	}
}

// rebuildKeepsRows rebuilds rt's projections and fails t unless they are
// as they were; it returns them.
func rebuildKeepsRows(t *testing.T, rt *rath.Runtime) map[string][]string {
	t.Helper()
	ctx := t.Context()
	before, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	after, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, before, after)
	return before
}

// sameRows fails t unless the projections dumped before and after a
// rebuild are equal row for row, naming the first row that differs.
func sameRows(t *testing.T, before, after map[string][]string) {
	t.Helper()
	for _, table := range projections.Tables {
		bt, at := before[table], after[table]
		for i := range max(len(bt), len(at)) {
			if i >= len(bt) || i >= len(at) || bt[i] != at[i] {
				t.Fatalf("%s: %d rows built incrementally, %d rebuilt; row %d differs:\nincremental: %s\nrebuilt:     %s",
					table, len(bt), len(at), i, at0(bt, i), at0(at, i))
			}
		}
	}
}

func at0(rows []string, i int) string {
	if i < len(rows) {
		return rows[i]
	}
	return "(none)"
}
