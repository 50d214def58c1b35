package retention_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	rathpkg "github.com/gorath/rath"
	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/retention"
	"github.com/gorath/rath/signkey"
)

// With a signing key, retention archives a run as an attested bundle that
// verifies from its files alone after the store has dropped the payloads.
func TestRetain_BundleArchiver(t *testing.T) {
	ctx := t.Context()
	rt, err := rathpkg.Open(ctx, filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := rt.Store()
	out, err := st.PutBlob(ctx, []byte("a tool's output, to be archived"))
	if err != nil {
		t.Fatal(err)
	}
	inRun := st.In(eventlog.Scope{Run: events.RunRef{ID: "run-1", Seed: "s"}})
	if _, err := inRun.Append(ctx, "run-1", 0, events.RunStarted{Run: "run-1", Workflow: "w", Seed: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inRun.Append(ctx, "s-1", 0, events.ToolCalled{Session: "s-1", CallID: "c1", Tool: "echo", Arguments: `{"x":1}`},
		events.ToolReturned{Session: "s-1", CallID: "c1", OutputRef: out, OutputSize: 31}); err != nil {
		t.Fatal(err)
	}
	if _, err := inRun.Append(ctx, "run-1", 1, events.RunFinished{Run: "run-1", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	files, err := signkey.Generate(filepath.Join(t.TempDir(), "k"), "rath.test/log")
	if err != nil {
		t.Fatal(err)
	}
	key, err := signkey.Load(files.Signer)
	if err != nil {
		t.Fatal(err)
	}
	archive := t.TempDir()
	rep, err := retention.Retain(ctx, rt, retention.Options{CompletedBefore: time.Now().Add(time.Hour), ArchiveTo: archive,
		Archiver: retention.BundleArchiver{Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Runs, []string{"run-1"}) || rep.ArchivedBytes == 0 || rep.Blobs != 1 {
		t.Fatalf("report %+v", rep)
	}
	at, err := bundle.Open(filepath.Join(archive, "run-1"), key.VerifierKey())
	if err != nil {
		t.Fatalf("the archived bundle does not verify once the store dropped its payloads: %v", err)
	}
	if at.Predicate.Run != "run-1" || len(at.Predicate.Redacted) != 0 {
		t.Fatalf("predicate %+v", at.Predicate)
	}
	if _, ok, err := st.Redacted(ctx, 3); err != nil || !ok {
		t.Fatalf("the tool result was not dropped from the store: %v %v", ok, err)
	}
}
