package pgtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// Unsynced is a server's options for suites that make many small
// databases and do not test durability: no fsync, no synchronous commit,
// no full-page writes, which keeps them cheap on a shared machine.
func Unsynced() Options {
	return Options{Settings: map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}}
}

// Template makes databases that are copies of one template database,
// created and prepared (migrated, typically) on first use: preparing a
// database costs seconds on a loaded machine, copying one a fraction of
// that. Its copies share what preparing wrote (a store id, for one).
// A Template is safe for concurrent use by parallel tests.
type Template struct {
	srv     *Server
	name    string
	prepare func(ctx context.Context, dsn string) error

	once sync.Once
	err  error // of the first preparation; every New reports it
	n    atomic.Int64
}

// Template returns a template database named name, prepared by prepare
// with its DSN the first time a copy is asked for. Its copies are named
// name followed by a number.
func (s *Server) Template(name string, prepare func(ctx context.Context, dsn string) error) *Template {
	return &Template{srv: s, name: name, prepare: prepare}
}

// New makes a copy of the template and returns its name and DSN. It fails
// tb when the template cannot be prepared or copied.
func (tp *Template) New(tb testing.TB) (name, dsn string) {
	tb.Helper()
	tp.once.Do(func() {
		// Not tb's context: the template outlives the test that made it.
		ctx := context.Background()
		dsn, err := tp.srv.CreateDatabase(ctx, tp.name)
		if err == nil {
			err = tp.prepare(ctx, dsn)
		}
		if err != nil {
			tp.err = fmt.Errorf("pgtest: prepare template %s: %w", tp.name, err)
		}
	})
	if tp.err != nil {
		tb.Fatal(tp.err)
	}
	name = fmt.Sprintf("%s%d", tp.name, tp.n.Add(1))
	dsn, err := tp.srv.CreateDatabaseFrom(context.Background(), name, tp.name)
	if err != nil {
		tb.Fatal(err)
	}
	return name, dsn
}
