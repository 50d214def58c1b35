package bundle_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath"
	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// mustStore opens a store holding one small run, "run-1", and returns it
// with a key.
func mustStore(t *testing.T) (*eventlog.Store, *signkey.Key) {
	t.Helper()
	ctx := t.Context()
	rt, err := rath.Open(ctx, filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	st := rt.Store()
	out, err := st.PutBlob(ctx, []byte("tool output 42"))
	if err != nil {
		t.Fatal(err)
	}
	inRun := st.In(eventlog.Scope{Run: events.RunRef{ID: "run-1", Seed: "s"}})
	if _, err := inRun.Append(ctx, "run-1", 0, events.RunStarted{Run: "run-1", Workflow: "w", Seed: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inRun.Append(ctx, "s-1", 0,
		events.ToolCalled{Session: "s-1", CallID: "c1", Tool: "echo", Arguments: `{"x":1}`},
		events.ToolReturned{Session: "s-1", CallID: "c1", OutputRef: out, OutputSize: 14}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "other", 0, events.RunStarted{Run: "other", Workflow: "w", Seed: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inRun.Append(ctx, events.ApprovalStream("a1"), 0, events.ApprovalRequested{ID: "a1", Run: "run-1", Session: "s-1",
		Kind: events.ApprovalTool, Tool: "echo", Arguments: `{"x":1}`, ArgsHash: "h"}); err != nil {
		t.Fatal(err)
	}
	// The decision comes from outside the run: no run id.
	if _, err := st.Append(ctx, events.ApprovalStream("a1"), 1, events.ApprovalDecided{ID: "a1", Run: "run-1", Decision: events.DecisionApproved, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inRun.Append(ctx, "run-1", 1, events.RunFinished{Run: "run-1", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	files, err := signkey.Generate(filepath.Join(t.TempDir(), "keys"), "rath.test/log")
	if err != nil {
		t.Fatal(err)
	}
	key, err := signkey.Load(files.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return st, key
}

func TestWrite_Bundle(t *testing.T) {
	st, key := mustStore(t)
	dir := filepath.Join(t.TempDir(), "b")
	res, err := bundle.Write(t.Context(), st, "run-1", dir, bundle.Options{Key: key, Replay: &bundle.Replay{OK: true, Verdict: "reproduced 4 of 4 events"}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Predicate
	if p.Events != 6 || p.FirstSeq != 1 || p.LastSeq != 7 || p.Status != "ok" || p.Workflow != "w" ||
		strings.Join(p.Tools, ",") != "echo" || !p.Replay.Replayed || p.Checkpoint.Size != 7 || p.Checkpoint.SignedBy != "rath.test/log" {
		t.Fatalf("predicate %+v", p)
	}
	if a := p.Approvals; len(a) != 1 || a[0].Decision != "approved" || a[0].By != "ana" || a[0].RequestedSeq != 5 || a[0].DecidedSeq != 6 {
		t.Fatalf("approvals %+v", a)
	}
	// Each line is exactly the store's leaf line; the other run's event is not there.
	lines, _ := os.ReadFile(filepath.Join(dir, bundle.EventsFile))
	var want bytes.Buffer
	for _, seq := range []int64{1, 2, 3, 5, 6, 7} {
		l, err := st.LeafLine(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		want.Write(append(l, '\n'))
	}
	if !bytes.Equal(lines, want.Bytes()) {
		t.Fatalf("events.jsonl:\n%s\nwant\n%s", lines, want.Bytes())
	}
	if res.Blobs != 1 {
		t.Fatalf("%d blobs, want the tool output", res.Blobs)
	}
	if _, err := bundle.Write(t.Context(), st, "run-1", dir, bundle.Options{Key: key}); !errors.Is(err, bundle.ErrExists) {
		t.Fatalf("a second bundle into the same directory: %v, want ErrExists", err)
	}
}

func TestWrite_Refuses(t *testing.T) {
	st, key := mustStore(t)
	ctx := t.Context()
	other, _ := mustStore(t) // another log: same shape, other timestamps and salts
	rewritten, err := bundle.SignCheckpoint(ctx, other, key, "")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := signkey.Generate(filepath.Join(t.TempDir(), "w"), "witness.test")
	witness, _ := signkey.Load(files.Signer)
	tests := []struct {
		name string
		opts bundle.Options
		want error
		text string
	}{
		{"no key", bundle.Options{}, bundle.ErrNoKey, ""},
		{"a checkpoint of a rewritten log", bundle.Options{Key: key,
			Checkpoint: func(context.Context, int64) ([]byte, error) { return rewritten, nil }},
			bundle.ErrCheckpoint, "the log was rewritten"},
		{"a checkpoint signed by another key", bundle.Options{Key: key,
			Checkpoint: func(ctx context.Context, _ int64) ([]byte, error) {
				return bundle.SignCheckpoint(ctx, st, witness, "rath.test/log")
			}},
			bundle.ErrCheckpoint, ""},
		{"a witness that did not cosign", bundle.Options{Key: key, Witnesses: []string{witness.VerifierKey()}},
			bundle.ErrCheckpoint, "no valid signature by witness witness.test"},
		{"a checkpoint before the run's end", bundle.Options{Key: key,
			Checkpoint: func(context.Context, int64) ([]byte, error) {
				return note.Sign(&note.Note{Text: "rath.test/log\n2\n" + mustHead(t, st, 2) + "\n"}, key.NoteSigner())
			}},
			bundle.ErrCheckpoint, "the run's last event is seq 7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			_, err := bundle.Write(ctx, st, "run-1", dir, tc.opts)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.text)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused bundle left %s: %v", dir, err)
			}
		})
	}
	if _, err := bundle.Write(ctx, st, "no-such-run", filepath.Join(t.TempDir(), "b"), bundle.Options{Key: key}); !errors.Is(err, bundle.ErrNoEvents) {
		t.Fatalf("unknown run: %v", err)
	}
}

// A witness's cosignature on the checkpoint is checked and named.
func TestWrite_Witnessed(t *testing.T) {
	st, key := mustStore(t)
	witness := newTestKey(t, "witness.test")
	cosigned := cosignedBy(t, st, key, witness)
	dir := filepath.Join(t.TempDir(), "b")
	res, err := bundle.Write(t.Context(), st, "run-1", dir, bundle.Options{Key: key, Checkpoint: cosigned, Witnesses: []string{witness.VerifierKey()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Predicate.Checkpoint.WitnessedBy; len(got) != 1 || got[0] != "witness.test" {
		t.Fatalf("witnessed by %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, bundle.WitnessesFile)); string(b) != witness.VerifierKey()+"\n" {
		t.Fatalf("witnesses.vkey %q", b)
	}
}

// OpenWith with pinned keys: the real witness's key passes and is marked
// pinned; a key of the same name that did not cosign fails with a
// *WitnessError naming the key ids; another log key fails.
func TestOpenWith_Pins(t *testing.T) {
	st, key := mustStore(t)
	witness := newTestKey(t, "witness.test")
	impostor := newTestKey(t, "witness.test")
	cosigned := cosignedBy(t, st, key, witness)
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := bundle.Write(t.Context(), st, "run-1", dir, bundle.Options{Key: key, Checkpoint: cosigned, Witnesses: []string{witness.VerifierKey()}}); err != nil {
		t.Fatal(err)
	}
	at, err := bundle.OpenWith(dir, bundle.OpenOptions{LogKey: key.VerifierKey(), Witnesses: []string{witness.VerifierKey()}})
	if err != nil || !at.LogKeyPinned || !at.WitnessesPinned || len(at.Witnesses) != 1 || !at.Witnesses[0].Pinned || at.Witnesses[0].KeyID != witness.KeyID() {
		t.Fatalf("pinned real witness: %+v %v", at, err)
	}
	if at, err := bundle.OpenWith(dir, bundle.OpenOptions{}); err != nil || at.LogKeyPinned || at.WitnessesPinned || at.Witnesses[0].Pinned {
		t.Fatalf("no pins: %+v %v", at, err)
	}
	_, err = bundle.OpenWith(dir, bundle.OpenOptions{Witnesses: []string{impostor.VerifierKey()}})
	var we *bundle.WitnessError
	if !errors.As(err, &we) || !errors.Is(err, bundle.ErrInvalid) || !errors.Is(err, bundle.ErrUnwitnessed) ||
		!strings.Contains(err.Error(), "only by witness.test (key "+witness.KeyID()+", not pinned); pinned: witness.test (key "+impostor.KeyID()+")") {
		t.Fatalf("impostor pinned: %v", err)
	}
	if _, err := bundle.OpenWith(dir, bundle.OpenOptions{LogKey: impostor.VerifierKey()}); !errors.Is(err, bundle.ErrInvalid) {
		t.Fatalf("another log key: %v", err)
	}
}

// cosignedBy is an Options.Checkpoint: a fresh checkpoint signed by key
// and cosigned by witness.
func cosignedBy(t *testing.T, st *eventlog.Store, key, witness *signkey.Key) func(context.Context, int64) ([]byte, error) {
	return func(ctx context.Context, _ int64) ([]byte, error) {
		b, err := bundle.SignCheckpoint(ctx, st, key, "")
		if err != nil {
			return nil, err
		}
		n, err := note.Open(b, note.VerifierList(mustVerifier(t, key)))
		if err != nil {
			return nil, err
		}
		return note.Sign(n, witness.NoteSigner()) // keeps the signer's signature, adds the witness's
	}
}

func newTestKey(t *testing.T, name string) *signkey.Key {
	t.Helper()
	files, err := signkey.Generate(filepath.Join(t.TempDir(), "k"), name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := signkey.Load(files.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The standalone verifier stays short enough to read before running, and
// its module (one of its own, so `go run …@VERSION` fetches nothing but
// golang.org/x/mod) requires the golang.org/x/mod rath builds with, so a
// module cache that built rath builds it offline.
func TestVerifier_SmallAndPinned(t *testing.T) {
	src, err := os.ReadFile("../cmd/rathverify/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("\n")); n > 220 {
		t.Errorf("cmd/rathverify/main.go has %d lines, the budget is 220", n)
	}
	gomod, _ := os.ReadFile("../go.mod")
	gosum, _ := os.ReadFile("../go.sum")
	vmod, _ := os.ReadFile("../cmd/rathverify/go.mod")
	vsum, _ := os.ReadFile("../cmd/rathverify/go.sum")
	if !bytes.Contains(vmod, []byte("module github.com/gorath/rath/cmd/rathverify\n")) {
		t.Errorf("cmd/rathverify/go.mod:\n%s", vmod)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(vsum)), "\n") {
		if !bytes.Contains(gosum, []byte(line+"\n")) {
			t.Errorf("go.sum lacks the verifier's %q", line)
		}
	}
	fields := strings.Fields(string(vmod))
	if v := fields[len(fields)-1]; !bytes.Contains(gomod, []byte("golang.org/x/mod "+v+"\n")) {
		t.Errorf("go.mod does not require golang.org/x/mod %s, the verifier's version", v)
	}
}

func mustHead(t *testing.T, st *eventlog.Store, size int64) string {
	t.Helper()
	h, err := st.TreeHeadAt(t.Context(), size)
	if err != nil {
		t.Fatal(err)
	}
	return h.Root.String()
}

func mustVerifier(t *testing.T, k *signkey.Key) note.Verifier {
	t.Helper()
	v, _, err := signkey.ParseVerifierKey(k.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpen(t *testing.T) {
	st, key := mustStore(t)
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := bundle.Write(t.Context(), st, "run-1", dir, bundle.Options{Key: key}); err != nil {
		t.Fatal(err)
	}
	a, err := bundle.Open(dir, key.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	if a.KeyID != key.KeyID() || a.Predicate.Run != "run-1" || a.Predicate.Replay.Verdict != "not replayed" {
		t.Fatalf("attestation %+v", a)
	}
	files, _ := signkey.Generate(filepath.Join(t.TempDir(), "k"), "rath.test/log")
	other, _ := signkey.Load(files.Signer)
	tamper := []struct {
		name string
		do   func(dir string)
		vkey string
		want string
	}{
		{"another key", func(string) {}, other.VerifierKey(), "no valid signature by key " + other.KeyID()},
		{"a payload", func(d string) { appendTo(t, filepath.Join(d, "payloads", "1.json"), " ") }, "", "payloads/1.json: its SHA-256 is not the attested one"},
		{"an extra file", func(d string) { appendTo(t, filepath.Join(d, "blobs", "x"), "x") }, "", "blobs/x: not attested"},
	}
	for _, tc := range tamper {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "b")
			if _, err := bundle.Write(t.Context(), st, "run-1", d, bundle.Options{Key: key}); err != nil {
				t.Fatal(err)
			}
			tc.do(d)
			if _, err := bundle.Open(d, tc.vkey); !errors.Is(err, bundle.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}
