package eventlog

import (
	"context"
	"fmt"
	"time"
)

// Now is the time on the clock every process sharing the store agrees
// on: the database server's clock on PostgreSQL, whose processes may run
// on machines whose clocks disagree; local's (nil: time.Now) on SQLite,
// whose file one machine's processes share. Leases and heartbeats kept
// beside the log are on it.
func (s *Store) Now(ctx context.Context, local func() time.Time) (time.Time, error) {
	expr := s.d.clockNanos()
	if expr == "" {
		return localNow(local), nil
	}
	var ns int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT `+expr).Scan(&ns); err != nil {
		return time.Time{}, fmt.Errorf("eventlog: read the database's clock: %w", err)
	}
	return time.Unix(0, ns), nil
}

// NowSQL is Now for a statement to read where it runs, in nanoseconds
// since the epoch: an SQL expression, with ? placeholders, and its
// arguments. On PostgreSQL the server reads its clock as the statement
// runs, so a statement stamped with it needs no query of its own.
func (s *Store) NowSQL(local func() time.Time) (expr string, args []any) {
	if expr := s.d.clockNanos(); expr != "" {
		return expr, nil
	}
	return "?", []any{localNow(local).UnixNano()}
}

func localNow(local func() time.Time) time.Time {
	if local != nil {
		return local()
	}
	return time.Now()
}
