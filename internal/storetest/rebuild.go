package storetest

import (
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
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
