package cli

import (
	"math"
	"testing"
	"time"
)

// --since takes any date; the runs query takes Unix nanoseconds, which
// end in 2262 and begin in 1677.
func TestClampedUnixNano(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano()},
		{time.Unix(0, 0), 0},
		{time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64},
	} {
		if got := clampedUnixNano(c.at); got != c.want {
			t.Errorf("clampedUnixNano(%v) = %d, want %d", c.at, got, c.want)
		}
	}
}
