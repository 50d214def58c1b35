package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/projections"
)

// testSealedColumns: with a key-encryption key, the read models' content
// columns (a run's params and error, an approval's question and reason)
// hold ciphertext: the canaries of two subjects are in no file of the
// database, yet the reader opens them; a rebuild writes the same rows
// and Check finds no difference. Once one subject is erased its columns
// read as erased, the other's still read back.
func testSealedColumns(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	opts := tg.Options()
	opts.KEK = keyringtest.KEK(t)
	rt, err := rath.OpenWith(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rt.Close() }()
	canaries := map[string]string{"alice": "canary-columns-alice-6e2b", "bob": "canary-columns-bob-6e2b"}
	for _, who := range []string{"alice", "bob"} {
		run, c := "r-"+who, canaries[who]
		sctx := events.ContextWithSubject(ctx, "user:"+who)
		st := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: run, Seed: "x"}})
		if _, err := st.Append(sctx, run, eventlog.NoStream, events.RunStarted{Run: run, Workflow: "wf", Seed: "x", Params: map[string]string{"prompt": c + " params"}, Subject: "user:" + who}); err != nil {
			t.Fatal(err)
		}
		req := events.ApprovalRequested{ID: "q-" + who, Run: run, Session: "s-" + who, Kind: "question", Question: c + " question", Reason: c + " reason"}
		if _, err := st.Append(sctx, events.ApprovalStream(req.ID), eventlog.NoStream, req); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(sctx, run, 1, events.RunFinished{Run: run, Status: rath.RunError, Error: c + " error"}); err != nil {
			t.Fatal(err)
		}
	}
	reads := func(who, want string) {
		t.Helper()
		run, c := "r-"+who, canaries[who]
		wantParams, wantErr, wantQ, wantR := c+" params", c+" error", c+" question", c+" reason"
		if want == projections.ErasedText {
			wantParams, wantErr, wantQ, wantR = "", want, want, want
		}
		r := rt.Reader()
		row, err := r.Run(ctx, run)
		if err != nil || row.Error != wantErr {
			t.Fatalf("run %s: error %q, %v; want %q", run, row.Error, err, wantErr)
		}
		st, err := r.RunState(ctx, run)
		if err != nil || st.Params["prompt"] != wantParams || st.ParamsErased != (want == projections.ErasedText) {
			t.Fatalf("run state %s: params %v (erased %v), %v; want %q", run, st.Params, st.ParamsErased, err, wantParams)
		}
		as, err := r.RunApprovals(ctx, run)
		if err != nil || len(as) != 1 || as[0].Question != wantQ || as[0].Reason != wantR {
			t.Fatalf("approvals of %s: %+v, %v; want %q and %q", run, as, err, wantQ, wantR)
		}
		all, err := r.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range all {
			if x.ID == run && x.Error != wantErr {
				t.Fatalf("runs lists %s with error %q, want %q", run, x.Error, wantErr)
			}
		}
	}
	reads("alice", "")
	reads("bob", "")
	checkRebuilds := func() {
		t.Helper()
		if rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{}); err != nil || len(rep.Differences) > 0 {
			t.Fatalf("check: %v %v", rep, err)
		}
		rebuildKeepsRows(t, rt)
	}
	checkRebuilds()
	rt.Close()
	files := tg.Files(t)
	for who, c := range canaries {
		if n := countIn(t, files, c); n != 0 {
			t.Fatalf("%s's canary is %d times in the database's files", who, n)
		}
	}

	if rt, err = rath.OpenWith(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "dpo", Reason: "request"}); err != nil {
		t.Fatal(err)
	}
	// The erasure drops alice's run and approval rows (a rebuild can no
	// longer make them from her sealed events); bob's read back.
	erased := func(r *projections.Reader) {
		t.Helper()
		if row, err := r.Run(ctx, "r-alice"); !errors.Is(err, projections.ErrNotFound) {
			t.Fatalf("alice's erased run reads as %+v, %v; want not found", row, err)
		}
		if as, err := r.RunApprovals(ctx, "r-alice"); err != nil || len(as) != 0 {
			t.Fatalf("alice's erased run has approvals %+v, %v; want none", as, err)
		}
	}
	erased(rt.Reader())
	reads("bob", "")
	checkRebuilds()
	// Another process's reader, whose cache still held alice's key.
	other, err := rath.OpenWith(context.WithoutCancel(ctx), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	erased(other.Reader())
}
