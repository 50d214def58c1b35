package memory_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/memory"
)

func MustOpenRuntime(tb testing.TB, dir string) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// MustOpenLocal opens the local memory of rt at <rt dir>/memory.bleve, as
// the runtime does, closing it before rt.
func MustOpenLocal(tb testing.TB, rt *rath.Runtime, opts memory.LocalOptions) *memory.Local {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m, err := memory.OpenLocal(context.Background(), rt.Store(), indexDir(rt), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// testIndexName is the index directory the tests use inside a runtime
// directory. It is not the runtime's own (memory.bleve), so the tests keep
// working once rath.Open opens a memory of its own.
const testIndexName = "test-memory.bleve"

func indexDir(rt *rath.Runtime) string { return filepath.Join(rt.Dir(), testIndexName) }

// logBuffer collects log output; the indexer goroutine may write to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }
