package projections_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/projections"
)

// More checks at once than the read pool has connections, on both
// stores: each holds a snapshot and reads the log beside it, and when
// each held one connection and waited for another, the checks waited for
// each other until their deadline. They take turns, and all of them
// finish; a pool too small for one check is an error, not a wait.
func TestCheck_ConcurrentChecksTakeTurns(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			rt := st.open(t)
			defer rt.Close()
			populate(t, rt, 50)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			const checks = 2*eventlog.DefaultReadConns + 1
			var wg sync.WaitGroup
			errs := make([]error, checks)
			for i := range checks {
				wg.Go(func() {
					rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{})
					if err == nil && !rep.OK() {
						err = errors.New("differences")
					}
					errs[i] = err
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("check %d of %d at once: %v", i, checks, err)
				}
			}
		})
	}
}

// A read pool of one connection cannot hold a check's snapshot and read
// the log beside it: Check says so at once. Two are enough.
func TestCheck_RefusesAPoolTooSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	populate(t, rt, 5)
	for _, tt := range []struct {
		conns   int
		refused bool
	}{{1, true}, {2, false}} {
		pool, err := eventlog.Open(ctx, eventlog.Options{Path: filepath.Join(dir, rath.DBFile), ReadConns: tt.conns})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := projections.Check(ctx, pool, projections.CheckOptions{})
		pool.Close()
		if refused := errors.Is(err, eventlog.ErrFewReadConns); refused != tt.refused || (!refused && (err != nil || !rep.OK())) {
			t.Errorf("a check on a %d-connection pool: %v, want refused %v", tt.conns, err, tt.refused)
		}
	}
}
