package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
)

// printWAL prints the n relations (or, for records that touch none, the
// resource managers: commits, for one) that wrote the most WAL between
// two LSNs, per step, with the share of it that was full-page images. It
// reads the WAL itself (pg_walinspect), so it counts every writer: the
// event writer, its projections and River alike.
func printWAL(ctx context.Context, conn *pgx.Conn, phase, from, to string, n, steps int) error {
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
		return fmt.Errorf("pg_walinspect: %w", err)
	}
	rows, err := conn.Query(ctx, `
		SELECT coalesce(pg_filenode_relation(0, (regexp_match(block_ref, 'rel \d+/\d+/(\d+)'))[1]::oid)::regclass::text,
		                '(' || resource_manager || ')') AS what,
		       count(*), sum(record_length), sum(fpi_length)
		FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
		GROUP BY 1 ORDER BY 3 DESC LIMIT $3`, from, to, n)
	if err != nil {
		return fmt.Errorf("pg_walinspect: %w", err)
	}
	defer rows.Close()
	fmt.Fprintf(os.Stderr, "%s: top %d WAL writers (bytes/step, records/step, full-page image bytes/step, relation)\n", phase, n)
	for rows.Next() {
		var what string
		var count, bytes, fpi int64
		if err := rows.Scan(&what, &count, &bytes, &fpi); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  %8.0f %6.2f %8.0f  %s\n", float64(bytes)/float64(steps), float64(count)/float64(steps), float64(fpi)/float64(steps), what)
	}
	return rows.Err()
}
