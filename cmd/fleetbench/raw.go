package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/pgtest"
)

// rawPhase writes rows again on a fresh database, in a plain table with
// the events table's keys and no chain, from w connections: a run's rows
// up to and including each tool.returned in one transaction, one INSERT
// a row.
func rawPhase(ctx context.Context, c config, srv *pgtest.Server, w int, rows []row) (result, error) {
	res := result{name: fmt.Sprintf("raw W=%d", w), workers: w, raw: true, steps: c.runs * c.rounds, rows: len(rows)}
	dsn, err := srv.CreateDatabase(ctx, fmt.Sprintf("raw_w%d", w))
	if err != nil {
		return res, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return res, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE raw_events (
		seq BIGSERIAL PRIMARY KEY, stream TEXT NOT NULL, version BIGINT NOT NULL, type TEXT NOT NULL,
		run_id TEXT, payload TEXT NOT NULL, at BIGINT NOT NULL, hash TEXT NOT NULL, UNIQUE (stream, version));
		CREATE INDEX raw_events_run ON raw_events (run_id, seq) WHERE run_id IS NOT NULL`); err != nil {
		return res, err
	}
	// Transactions as the fleet made them: per run, up to each round's
	// end; rows of no run alone.
	var txs [][]row
	open := map[string]int{}
	for _, r := range rows {
		if r.run == "" {
			txs = append(txs, []row{r})
			continue
		}
		i, ok := open[r.run]
		if !ok {
			i = len(txs)
			txs = append(txs, nil)
			open[r.run] = i
		}
		txs[i] = append(txs[i], r)
		if r.typ == events.TypeToolReturned || r.finished {
			delete(open, r.run)
		}
	}
	before, err := snapshot(ctx, conn, srv)
	if err != nil {
		return res, err
	}
	work := make(chan []row)
	errs := make(chan error, w)
	var wg sync.WaitGroup
	start := time.Now()
	for range w {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return res, err
		}
		defer c.Close(ctx)
		wg.Go(func() {
			for tx := range work {
				if err := insertTx(ctx, c, tx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, tx := range txs {
		work <- tx
	}
	close(work)
	wg.Wait()
	res.wall = time.Since(start)
	select {
	case err := <-errs:
		return res, err
	default:
	}
	after, err := snapshot(ctx, conn, srv)
	if err != nil {
		return res, err
	}
	res.bytes, res.wal, res.serverCPU = after.bytes-before.bytes, walDiff(ctx, conn, after.lsn, before.lsn), after.cpu-before.cpu
	return res, nil
}

func insertTx(ctx context.Context, c *pgx.Conn, rows []row) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	for _, r := range rows {
		var run any
		if r.run != "" {
			run = r.run
		}
		if _, err := tx.Exec(ctx, `INSERT INTO raw_events (stream, version, type, run_id, payload, at, hash) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			r.stream, r.version, r.typ, run, r.payload, r.at.UnixNano(), r.hash); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
