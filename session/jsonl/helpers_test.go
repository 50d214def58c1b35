package jsonl_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

func MustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.OpenWith(context.Background(), rath.Options{Dir: tb.TempDir(), Store: rath.StoreOptions{Synchronous: "NORMAL"}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

func fixture(name string) string { return filepath.Join("testdata", name) }

// head returns the last seq of the log, to prove a failed import wrote
// nothing.
func head(tb testing.TB, rt *rath.Runtime) int64 {
	tb.Helper()
	h, err := rt.Store().Head(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return h.Seq
}

func roles(cs []events.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Role
	}
	return out
}
