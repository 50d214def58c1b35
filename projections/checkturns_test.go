package projections_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
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
// the log beside it: Check says so at once.
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
	small, err := eventlog.Open(ctx, eventlog.Options{Path: filepath.Join(dir, rath.DBFile), ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	_, err = projections.Check(ctx, small, projections.CheckOptions{})
	if err == nil || !strings.Contains(err.Error(), "read connections") {
		t.Fatalf("a check on a one-connection pool: %v", err)
	}
}
