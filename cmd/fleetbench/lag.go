package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// commitLags returns, for each row the subscriber saw, the time from its
// transaction's commit to its delivery: the sequencing lag as a reader
// sees it. The commit time is PostgreSQL's commit timestamp of the row's
// inserting transaction (track_commit_timestamp), so it counts neither
// the time the writer spent inside the transaction nor a batch's size.
//
// It also returns the lags of the rows committed from since on: the
// workers' events, without the batch submit's. The submit commits 3×R
// events in one transaction, and PostgreSQL takes a commit's timestamp
// before it flushes the commit to the WAL: in one R=200 run here, the
// submit's 600 events all reached the subscriber 54-61 ms after that
// timestamp, the first 54 ms after it: the flush of the transaction's
// WAL, not the order's assignment or the reading.
func commitLags(ctx context.Context, conn *pgx.Conn, rows []row, since time.Time) (all, after []time.Duration, err error) {
	if len(rows) == 0 {
		return nil, nil, nil
	}
	lo, hi := rows[0].seq, rows[0].seq
	for _, r := range rows {
		lo, hi = min(lo, r.seq), max(hi, r.seq)
	}
	q, err := conn.Query(ctx, `SELECT seq, pg_xact_commit_timestamp(xmin) FROM events WHERE seq BETWEEN $1 AND $2`, lo, hi)
	if err != nil {
		return nil, nil, fmt.Errorf("commit timestamps: %w", err)
	}
	committed := make(map[int64]time.Time, len(rows))
	for q.Next() {
		var seq int64
		var at *time.Time
		if err := q.Scan(&seq, &at); err != nil {
			q.Close()
			return nil, nil, fmt.Errorf("commit timestamps: %w", err)
		}
		if at == nil {
			q.Close()
			return nil, nil, fmt.Errorf("seq %d has no commit timestamp: is track_commit_timestamp on?", seq)
		}
		committed[seq] = *at
	}
	if err := q.Err(); err != nil {
		return nil, nil, fmt.Errorf("commit timestamps: %w", err)
	}
	all = make([]time.Duration, 0, len(rows))
	for _, r := range rows {
		at, ok := committed[r.seq]
		if !ok {
			return nil, nil, fmt.Errorf("seq %d was delivered but is not in the events table", r.seq)
		}
		all = append(all, r.delivered.Sub(at))
		if !at.Before(since) {
			after = append(after, r.delivered.Sub(at))
		}
	}
	return all, after, nil
}
