package storetest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// CountInDir counts needle in every file under dir, as grep -rc would
// over their bytes.
func CountInDir(t testing.TB, dir, needle string) int {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return countIn(t, files, needle)
}

// countIn counts needle in the files, as grep -c would over their bytes.
func countIn(t testing.TB, files []string, needle string) int {
	t.Helper()
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a file the server removed meanwhile
		}
		n += bytes.Count(b, []byte(needle))
	}
	return n
}

// testSealed: with a key-encryption key, a subject's content (a chunk, a
// blob, a payload big enough to be kept in blobs) is in no file of the
// database, reads back through the store, and the log verifies without
// the key; the same content appended with no KEK is in the files (the
// control). Opened without its KEK, or with another, the store refuses;
// once the subject's key is erased its events read as erased.
func testSealed(t *testing.T, b Backend) {
	ctx := t.Context()
	tg := b.New(t)
	kek := keyringtest.KEK(t)
	const sealedCanary, clearCanary = "canary-sealed-41c9e", "canary-clear-41c9e"
	appendContent := func(rt *rath.Runtime, ctx context.Context, run, stream, canary string) (blob string) {
		t.Helper()
		out := []byte(strings.Repeat(canary+" tool output ", 4))
		blob = eventlog.BlobHash(out)
		big := strings.Repeat(canary+" ", 3000) // over the blob threshold
		_, err := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: run, Seed: "x"}}).AppendWrites(ctx, eventlog.Write{Stream: stream, Expected: eventlog.NoStream, Blobs: [][]byte{out}, Events: []events.Payload{
			events.SessionCreated{Session: stream, Origin: "user", Chunks: []events.Chunk{{Role: "user", Content: canary + " says hello"}}},
			events.ChunkAppended{Session: stream, Index: 1, Chunk: events.Chunk{Role: "assistant", Content: "see " + blob}},
			events.ChunkAppended{Session: stream, Index: 2, Chunk: events.Chunk{Role: "assistant", Content: big}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return blob
	}
	readBack := func(rt *rath.Runtime, stream, canary, blob string) {
		t.Helper()
		evs, err := rt.Store().ReadStream(ctx, stream, 1)
		if err != nil || len(evs) != 3 {
			t.Fatalf("read %s: %d events, %v", stream, len(evs), err)
		}
		for i, want := range []string{canary + " says hello", "see " + blob, strings.Repeat(canary+" ", 3000)} {
			p, err := evs[i].Decode()
			if err != nil {
				t.Fatalf("decode %s #%d: %v", stream, i, err)
			}
			var got string
			switch p := p.(type) {
			case *events.SessionCreated:
				got = p.Chunks[0].Content
			case *events.ChunkAppended:
				got = p.Chunk.Content
			}
			if got != want {
				t.Fatalf("%s #%d reads back %.60q, want %.60q", stream, i, got, want)
			}
		}
		got, err := rt.Store().GetBlob(ctx, blob)
		if err != nil || !strings.Contains(string(got), canary) {
			t.Fatalf("blob %s: %.40q, %v", blob, got, err)
		}
	}

	// The control: no KEK, the content is on disk.
	rt, err := rath.OpenWith(ctx, tg.Options())
	if err != nil {
		t.Fatal(err)
	}
	clearBlob := appendContent(rt, ctx, "", "s-clear", clearCanary)
	readBack(rt, "s-clear", clearCanary, clearBlob)
	rt.Close()

	opts := tg.Options()
	opts.KEK = kek
	rt, err = rath.OpenWith(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	alice := events.ContextWithSubject(ctx, "user:alice")
	sealedBlob := appendContent(rt, alice, "run-a", "s-alice", sealedCanary)
	bobBlob := appendContent(rt, events.ContextWithSubject(ctx, "user:bob"), "", "s-bob", "canary-bob-41c9e")
	readBack(rt, "s-alice", sealedCanary, sealedBlob)
	readBack(rt, "s-clear", clearCanary, clearBlob) // the old plaintext still reads
	rep, err := rt.Store().Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Sealed != 6 || rep.SealedBlobs != 2 || rep.Unopened != 0 {
		t.Fatalf("verify with the key: %+v, %v", rep, err)
	}
	rt.Close()

	files := tg.Files(t)
	if n := countIn(t, files, clearCanary); n == 0 {
		t.Fatalf("the control's canary is not in the database's files (%d files): the grep finds nothing", len(files))
	}
	if n := countIn(t, files, sealedCanary); n != 0 {
		t.Fatalf("the sealed canary is %d times in the database's files", n)
	}

	// Without its KEK, or with another, the store does not open.
	if _, err := rath.OpenWith(ctx, tg.Options()); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("open without the KEK: %v, want ErrKEK", err)
	}
	wrong := tg.Options()
	wrong.KEK = keyringtest.KEK(t)
	if _, err := rath.OpenWith(ctx, wrong); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("open with another KEK: %v, want ErrKEK", err)
	}

	// Erase alice's key (as rath erase does, here by hand): her events
	// read as erased, Bob's still read, and the log still verifies.
	if err := tg.Exec(t, `DELETE FROM subject_keys WHERE subject = 'user:alice'`); err != nil {
		t.Fatal(err)
	}
	rt, err = rath.OpenWith(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	evs, err := rt.Store().ReadStream(ctx, "s-alice", 1)
	if err != nil || len(evs) != 3 {
		t.Fatalf("read after erase: %d events, %v", len(evs), err)
	}
	for _, ev := range evs {
		if !ev.Redacted || string(ev.Payload) != events.ErasedMarker {
			t.Fatalf("seq %d after erase: redacted %v, payload %.60s", ev.Seq, ev.Redacted, ev.Payload)
		}
		if _, err := ev.Decode(); !errors.Is(err, events.ErrErased) || !errors.Is(err, events.ErrRedacted) {
			t.Fatalf("decode after erase: %v, want ErrErased (and ErrRedacted)", err)
		}
	}
	if _, err := rt.Store().GetBlob(ctx, sealedBlob); !errors.Is(err, keyring.ErrErased) {
		t.Fatalf("alice's blob after erase: %v, want ErrErased", err)
	}
	readBack(rt, "s-bob", "canary-bob-41c9e", bobBlob)
	rep, err = rt.Store().Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Unopened == 0 {
		t.Fatalf("verify after erase: %+v, %v", rep, err)
	}
}
