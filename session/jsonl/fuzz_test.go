package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath/session/jsonl"
)

// FuzzImport checks that no input panics the importer, and that an import
// either writes a whole session or nothing.
func FuzzImport(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	rt := MustOpen(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		before := head(t, rt)
		rep, err := jsonl.ImportSources(ctx, rt.Sessions(), jsonl.Source{Name: "fuzz.jsonl", Reader: bytes.NewReader(data)})
		after := head(t, rt)
		fr := rep.Files[0]
		if err != nil {
			if after != before {
				t.Fatalf("failed import (%v) wrote %d events", err, after-before)
			}
			if fr.OK() {
				t.Fatalf("error %v but the report says OK", err)
			}
			// Anything the parser accepts must be accepted by the store: any
			// other error means the parser let through what the log refuses.
			if !errors.Is(err, jsonl.ErrMalformed) && !errors.Is(err, jsonl.ErrExists) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if want := before + 1 + int64(fr.Chunks); after != want {
			t.Fatalf("import of %d chunks moved the head from %d to %d", fr.Chunks, before, after)
		}
		s, err := rt.Session(ctx, fr.Session)
		if err != nil {
			t.Fatalf("imported session %q cannot be loaded: %v", fr.Session, err)
		}
		if s.Len() != fr.Chunks {
			t.Fatalf("session has %d chunks, report says %d", s.Len(), fr.Chunks)
		}
	})
}
