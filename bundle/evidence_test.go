package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"
)

// A bundle carries the store's own checkpoint with a witness's
// cosignature, and a run whose tool output was redacted after the
// checkpoint still exports and verifies, naming the redacted seq.
func TestWrite_StoredWitnessedCheckpointAndARedactedEvent(t *testing.T) {
	st, key := mustStore(t)
	ctx := t.Context()
	if _, err := checkpoint.Sign(ctx, st, key); err != nil {
		t.Fatal(err)
	}
	files, err := signkey.Generate(filepath.Join(t.TempDir(), "w"), "witness.test")
	if err != nil {
		t.Fatal(err)
	}
	wkey, err := signkey.Load(files.Signer)
	if err != nil {
		t.Fatal(err)
	}
	w := &checkpoint.Witness{Key: wkey, LogKey: key.VerifierKey(), StatePath: filepath.Join(t.TempDir(), "state.json")}
	if _, err := w.Step(ctx, st); err != nil {
		t.Fatal(err)
	}
	// seq 3 is the tool result; its output blob is named by it alone.
	if _, err := st.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{3}, By: "dpo", Reason: "erasure request"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "b")
	res, err := bundle.Write(ctx, st, "run-1", dir, bundle.Options{Key: key,
		StoredCheckpoint: func(ctx context.Context, minSize int64) ([]byte, []string, error) {
			cp, err := checkpoint.ForExport(ctx, st, key, minSize)
			if err != nil {
				return nil, nil, err
			}
			return cp.Signed(), cp.Witnesses(), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Predicate
	if !slices.Equal(p.Redacted, []int64{3}) || p.Checkpoint.Size != 7 || !slices.Contains(p.Checkpoint.WitnessedBy, "witness.test") {
		t.Fatalf("predicate: redacted %v, checkpoint %+v", p.Redacted, p.Checkpoint)
	}
	if _, err := os.Stat(filepath.Join(dir, bundle.PayloadsDir, "3.json")); !os.IsNotExist(err) {
		t.Fatalf("the redacted payload was exported: %v", err)
	}
	if res.Blobs != 0 {
		t.Fatalf("%d blobs exported, want none: the only blob was redacted", res.Blobs)
	}
	at, err := bundle.Open(dir, key.VerifierKey())
	if err != nil {
		t.Fatalf("the bundle of a run with a redacted event does not verify: %v", err)
	}
	if !slices.Equal(at.Predicate.Redacted, []int64{3}) {
		t.Fatalf("opened predicate redacted %v", at.Predicate.Redacted)
	}
	wv, _ := os.ReadFile(filepath.Join(dir, bundle.WitnessesFile))
	if !strings.Contains(string(wv), wkey.VerifierKey()) {
		t.Fatalf("witnesses.vkey %q lacks the witness", wv)
	}
}
