package events_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorath/rath/events"
)

// Another connection holds the write lock past the busy timeout: appends
// fail with a *StorageError matching ErrBusy, write nothing, and succeed
// once the lock is released.
func TestStore_BusyLockIsATypedErrorAndNothingIsHalfWritten(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	s := MustOpenStore(t, events.Options{Path: path, BusyTimeout: 150 * time.Millisecond})
	if _, err := s.Append(ctx, "s", events.NoStream, placed("s", "0")); err != nil {
		t.Fatal(err)
	}
	holder := rawDB(t, path)
	holder.SetMaxOpenConns(1)
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	big := make([]byte, 64<<10) // a blob too: nothing of it may stay
	_, err = s.AppendWrites(ctx, events.Write{Stream: "s", Expected: 1, Events: []events.Payload{placed("s", "1"), placed("s", "2")}, Blobs: [][]byte{big}})
	var se *events.StorageError
	if !errors.Is(err, events.ErrBusy) || !errors.As(err, &se) {
		t.Fatalf("append under a held lock = %v, want a *StorageError matching ErrBusy", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("gave up after %v, before the busy timeout", waited)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if v, err := s.StreamVersion(ctx, "s"); err != nil || v != 1 {
		t.Fatalf("stream version = %d, %v; the failed append left something", v, err)
	}
	if _, err := s.GetBlob(ctx, events.BlobHash(big)); !errors.Is(err, events.ErrBlobNotFound) {
		t.Fatalf("blob of the failed append: %v", err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := s.Append(ctx, "s", int64(i), placed("s", fmt.Sprint(i))); err != nil {
			t.Fatalf("append %d after the lock was released: %v", i, err)
		}
	}
	if rep, err := s.Verify(ctx, events.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 4 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}
