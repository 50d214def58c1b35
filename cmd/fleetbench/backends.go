package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/proccpu"
)

// subscriberApp names the connections of the benchmark's own subscriber
// (it follows the log as a console or an exporter would).
const subscriberApp = "fleetbench subscriber"

// serverOwn stands for the server's own processes (the WAL writer, the
// checkpointer, the background writer), counted together.
const serverOwn = "the server's own processes"

// byConnection lists the backends fleetbench reports apart, in the
// table's order: each rath connection's name, the subscriber's, then the
// server's own.
var byConnection = []string{
	eventlog.AppWriter, eventlog.AppReads, eventlog.AppTree, eventlog.AppListen, eventlog.AppKeys,
	fleet.AppRiver, fleet.AppRiverListen, subscriberApp, "autovacuum worker", serverOwn,
}

// backend is one server process of the database and what it is for:
// its connection's application_name, or its kind when it has none.
type backend struct {
	app string
	cpu time.Duration
}

// backends reads the CPU so far of every backend of conn's database but
// conn's own, and of the server's own processes (the WAL writer, the
// checkpointer: no database), those under serverOwn.
func backends(ctx context.Context, conn *pgx.Conn) (map[int]backend, error) {
	rows, err := conn.Query(ctx, `SELECT pid, CASE WHEN datname IS NULL THEN $1
			WHEN application_name <> '' THEN application_name ELSE backend_type END
		FROM pg_stat_activity WHERE (datname = current_database() OR datname IS NULL) AND pid <> pg_backend_pid()`, serverOwn)
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	type proc struct {
		pid int
		app string
	}
	var procs []proc
	for rows.Next() {
		var p proc
		if err := rows.Scan(&p.pid, &p.app); err != nil {
			return nil, fmt.Errorf("backends: %w", err)
		}
		procs = append(procs, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	out := make(map[int]backend, len(procs))
	for _, p := range procs {
		cpu, err := proccpu.Process(p.pid)
		if err != nil {
			continue // it ended since
		}
		out[p.pid] = backend{app: p.app, cpu: cpu}
	}
	return out, nil
}

// cpuByApp is what each application's backends spent from before to
// after. A backend that started and ended between the two is not seen.
func cpuByApp(before, after map[int]backend) map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid, b := range after {
		d := b.cpu
		if old, ok := before[pid]; ok && old.app == b.app {
			d -= old.cpu
		}
		out[b.app] += d
	}
	return out
}

// withAppName is dsn with its connections named app.
func withAppName(dsn, app string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // eventlog.Open reports it
	}
	q := u.Query()
	q.Set("application_name", app)
	// pgx reads a "+" in the DSN's query as itself, not as a space.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String()
}
