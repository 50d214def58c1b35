package queryplan

import (
	"context"
	"database/sql"
	"fmt"
)

// Querier is what the plans are read through: a *sql.DB, *sql.Conn or
// *sql.Tx (and sqlx's).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQLite returns the detail lines of SQLite's EXPLAIN QUERY PLAN for q
// with args ("SEARCH t USING INDEX …", "SCAN t").
func SQLite(ctx context.Context, db Querier, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		return nil, fmt.Errorf("queryplan: %w", err)
	}
	return lines(rows, func(r *sql.Rows) (string, error) {
		var id, parent, unused int
		var detail string
		err := r.Scan(&id, &parent, &unused, &detail)
		return detail, err
	})
}

// Postgres returns the lines of PostgreSQL's EXPLAIN for q with args:
// q may be a query or "EXECUTE name(…)" of a prepared one.
func Postgres(ctx context.Context, db Querier, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, `EXPLAIN `+q, args...)
	if err != nil {
		return nil, fmt.Errorf("queryplan: %w", err)
	}
	return lines(rows, func(r *sql.Rows) (string, error) {
		var line string
		err := r.Scan(&line)
		return line, err
	})
}

func lines(rows *sql.Rows, scan func(*sql.Rows) (string, error)) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		line, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("queryplan: %w", err)
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queryplan: %w", err)
	}
	return out, nil
}
