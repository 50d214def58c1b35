package storetest

import (
	"testing"
	"time"
)

// testSharedClock checks the clock leases and heartbeats are kept on
// (eventlog's Store.Now and Store.NowSQL): a statement stamped with
// NowSQL and Now agree; on SQLite both are the caller's local clock, on
// PostgreSQL the server's, whatever the caller's says.
func testSharedClock(t *testing.T, b Backend) {
	tg := b.New(t)
	s := OpenStore(t, tg)
	fixed := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	local := func() time.Time { return fixed }

	got, err := s.Now(t.Context(), local)
	if err != nil {
		t.Fatal(err)
	}
	expr, args := s.NowSQL(local)
	var stamped int64
	if err := s.DB().QueryRowContext(t.Context(), s.DB().Rebind(`SELECT `+expr), args...).Scan(&stamped); err != nil {
		t.Fatalf("SELECT %s: %v", expr, err)
	}
	if tg.DSN == "" {
		if !got.Equal(fixed) || stamped != fixed.UnixNano() {
			t.Fatalf("Now = %v, NowSQL stamps %v; want the local clock's %v for both", got, time.Unix(0, stamped).UTC(), fixed)
		}
		return
	}
	// The server's clock, not the local one; the two readings a moment
	// apart, in order.
	if d := time.Since(got); d < -time.Minute || d > time.Minute {
		t.Fatalf("Now = %v: want the server's clock, near %v", got, time.Now())
	}
	if at := time.Unix(0, stamped); at.Before(got) || at.Sub(got) > time.Minute {
		t.Fatalf("NowSQL stamps %v after Now said %v", at, got)
	}
}
