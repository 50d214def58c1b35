package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
)

// errNotPgx is a read pool connection that is not pgx's: the page is read
// through database/sql.
var errNotPgx = errors.New("eventlog: the read pool's connection is not pgx's")

// scanRowsPgx is scanRows through pgx's own scanning, on a connection of
// the read pool: database/sql's conversions of each value cost about a
// third of reading a page.
func (s *Store) scanRowsPgx(ctx context.Context, q Query, after int64, limit int) ([]row, error) {
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: read: %w", err)
	}
	defer conn.Close()
	where, args := q.where(after)
	args = append(args, limit)
	query := s.rebind(selectEvents + where + " ORDER BY seq LIMIT ?")
	out := make([]row, 0, min(limit, scanPage))
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNotPgx
		}
		rs, err := sc.Conn().Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		var runID *string
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &runID, &r.Payload, &r.At, &r.Hash); err != nil {
				return err
			}
			if runID != nil {
				r.RunID = sql.NullString{String: *runID, Valid: true}
			}
			out = append(out, r)
		}
		return rs.Err()
	})
	if errors.Is(err, errNotPgx) {
		return s.scanRows(ctx, s.rdb, q, after, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: read: %w", err)
	}
	return out, nil
}
