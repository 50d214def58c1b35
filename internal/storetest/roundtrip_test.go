package storetest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// A group commit on PostgreSQL costs a fixed number of round trips,
// whatever its events and blobs: BEGIN, the chain lock with the tail (one
// pipeline), one statement for the rows, the tree and the NOTIFY, and
// COMMIT. Counted on the wire (events.Stats.RoundTrips).
func TestPostgres_RoundTripsPerCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := fmt.Sprintf("conf%d", dbs.Add(1))
	dsn, err := server.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.OpenStore(t, storetest.Target{Dir: t.TempDir(), DSN: dsn})
	big := strings.Repeat("x", 70<<10) // past the blob threshold
	appendOne := func(i int) {
		t.Helper()
		ps := []events.Payload{
			&events.SessionPlaced{Session: "s", Backend: "local", Spec: fmt.Sprint(i)},
			&events.SessionPlaced{Session: "s", Backend: "local", Spec: big + fmt.Sprint(i)},
			&events.SessionPlaced{Session: "s", Backend: "local", Spec: "c"},
		}
		if _, err := s.Append(ctx, "s", events.AnyVersion, ps...); err != nil {
			t.Fatal(err)
		}
	}
	appendOne(0) // prepares the statements
	before := s.Stats()
	const n = 10
	for i := 1; i <= n; i++ {
		appendOne(i)
	}
	after := s.Stats()
	commits, trips := after.Commits-before.Commits, after.RoundTrips-before.RoundTrips
	if commits != n || after.Events-before.Events != 3*n {
		t.Fatalf("%d commits of %d events, want %d of %d", commits, after.Events-before.Events, n, 3*n)
	}
	if got, want := float64(trips)/float64(commits), 4.0; got > want {
		t.Fatalf("%.1f round trips per commit of 3 events and a blob, want at most %.0f", got, want)
	}
	var blobs int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM blobs`).Scan(&blobs); err != nil || blobs != n+1 {
		t.Fatalf("%d blobs (%v), want %d", blobs, err, n+1)
	}
}
