//go:build integration

package eventlog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/tmpfs"
)

// The store's file system fills up while appending (a 2 MiB tmpfs, with a
// filler file taking most of it): appends fail with a *StorageError
// matching ErrFull, every acknowledged event is still there and verifies,
// and appends succeed again once the filler is removed.
func TestStore_FullDiskIsATypedErrorAndLosesNothing(t *testing.T) {
	ctx := t.Context()
	dir := tmpfs.Mount(t, "2m")
	path := filepath.Join(dir, "rath.db")
	migrate(t, path)
	s, err := eventlog.Open(ctx, eventlog.Options{Path: path, BlobThreshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Warm up the WAL and its index before taking the space.
	if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "first")); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 1200<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	acked := int64(1)
	var fullErr error
	for i := 1; i < 10000; i++ {
		ev := events.ToolReturned{Session: "s", CallID: fmt.Sprint("c", i), Tool: "t", Error: strings.Repeat(fmt.Sprint(i%10), 8<<10)}
		if _, err := s.Append(ctx, "s", acked, ev); err != nil {
			fullErr = err
			break
		}
		acked++
	}
	var se *eventlog.StorageError
	if !errors.Is(fullErr, eventlog.ErrFull) || !errors.As(fullErr, &se) {
		t.Fatalf("append on a full disk = %v, want a *StorageError matching ErrFull", fullErr)
	}
	t.Logf("%d events acknowledged, then: %v", acked, fullErr)
	check := func(st *eventlog.Store, want int64) {
		t.Helper()
		rep, err := st.Verify(ctx, eventlog.VerifyOptions{})
		if err != nil || !rep.OK() || rep.Events != want {
			t.Fatalf("verify = %+v, %v; want %d events", rep, err, want)
		}
		if v, err := st.StreamVersion(ctx, "s"); err != nil || v != want {
			t.Fatalf("stream version = %d, %v; want %d", v, err, want)
		}
	}
	check(s, acked)
	// Still full: still a typed error, still nothing lost.
	if _, err := s.Append(ctx, "s", acked, events.ToolReturned{Session: "s", CallID: "again", Tool: "t", Error: strings.Repeat("x", 8<<10)}); !errors.Is(err, eventlog.ErrFull) {
		t.Fatalf("second append on a full disk = %v", err)
	}
	check(s, acked)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Append(ctx, "s", acked, events.ToolReturned{Session: "s", CallID: fmt.Sprint("after", acked), Tool: "t", Error: strings.Repeat("y", 8<<10)}); err != nil {
			t.Fatalf("append after freeing space: %v", err)
		}
		acked++
	}
	check(s, acked)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := eventlog.Open(ctx, eventlog.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	check(re, acked)
}
