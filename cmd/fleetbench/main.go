package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/internal/netdelay"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/proccpu"
	"github.com/gorath/rath/keyring"
)

// config is the command line.
type config struct {
	runs, rounds, concurrency, singles int
	httpRuns                           int
	workers                            []int
	rath, cpuProfiles                  string
	// kek is the key-encryption key every rath process seals with
	// (RATH_KEK_FILE) and the subscriber opens the log with; empty:
	// nothing is sealed.
	kek          string
	statements   int
	walRelations int
	timeout      time.Duration
	// delays are -pg-delay's: each sets of phases runs with every
	// process's connections to PostgreSQL through a proxy delaying each
	// direction by it (internal/netdelay); 0 connects directly.
	delays []time.Duration
}

func main() {
	var c config
	var workers, delays string
	flag.IntVar(&c.runs, "runs", 200, "runs per phase (R)")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds per run (K): a model reply, a shell command, the transcript")
	flag.StringVar(&workers, "workers", "1,4", "worker process counts (W), one phase each; empty: time the single submits only")
	flag.IntVar(&c.concurrency, "concurrency", 4, "runs each worker executes at once (rath worker --concurrency)")
	flag.IntVar(&c.singles, "singles", 5, "single `rath submit` processes timed for the submit CPU")
	flag.IntVar(&c.httpRuns, "http", 50, "single-run POST /api/runs requests timed on one rath serve (0: none)")
	flag.StringVar(&c.rath, "rath", "", "the rath binary to measure (empty: go build ./cmd/rath)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up on a phase after this long")
	flag.IntVar(&c.statements, "statements", 0, "print each phase's N most expensive SQL statements (pg_stat_statements; 0: none)")
	flag.IntVar(&c.walRelations, "wal", 0, "print each phase's N relations that wrote the most WAL (pg_walinspect; 0: none)")
	flag.StringVar(&delays, "pg-delay", "0", "delays each way between every process and PostgreSQL (a TCP proxy), one set of phases each: e.g. 0,0.5ms,2ms (0: direct)")
	flag.StringVar(&c.cpuProfiles, "cpuprofile", "", "a directory where each worker process writes its CPU profile (workerN-W.pprof)")
	flag.StringVar(&c.kek, "kek", os.Getenv("RATH_KEK_FILE"), "a key-encryption key file (rath keys kek --out FILE): every rath process seals content under it (default: $RATH_KEK_FILE)")
	flag.Parse()
	if c.kek != "" {
		// The submit, the workers and rath serve inherit it.
		os.Setenv("RATH_KEK_FILE", c.kek)
	}
	for _, w := range strings.FieldsFunc(workers, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "fleetbench: -workers %q: want a list of counts ≥ 1\n", workers)
			os.Exit(2)
		}
		c.workers = append(c.workers, n)
	}
	var err error
	if c.delays, err = parseDelays(delays); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	tmp, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if c.rath == "" {
		c.rath = filepath.Join(tmp, "rath")
		build := exec.CommandContext(ctx, "go", "build", "-o", c.rath, "./cmd/rath")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/rath (run from the repository's root, or give -rath): %w", err)
		}
	}
	// Commit timestamps date each event's commit, for the sequencing lag.
	settings := map[string]string{"track_commit_timestamp": "on"}
	if c.statements > 0 {
		settings["shared_preload_libraries"] = "pg_stat_statements"
		settings["pg_stat_statements.track"] = "all"
		settings["pg_stat_statements.track_planning"] = "on"
	}
	srv, err := pgtest.Start(ctx, pgtest.Options{Settings: settings})
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(os.Stderr, "fleetbench: PostgreSQL on port %d; R=%d runs of K=%d rounds, W=%v worker processes × %d runs each; delays each way %v\n",
		srv.Port(), c.runs, c.rounds, c.workers, c.concurrency, c.delays)
	if c.kek != "" {
		fmt.Fprintf(os.Stderr, "fleetbench: content sealed under the key-encryption key %s\n", c.kek)
	}

	single, err := singleSubmits(ctx, c, srv, tmp)
	if err != nil {
		return err
	}
	httpCPU, err := httpSubmits(ctx, c, srv, tmp, c.httpRuns)
	if err != nil {
		return fmt.Errorf("POST /api/runs: %w", err)
	}
	var results, raws []result
	for i, d := range c.delays {
		var proxy *netdelay.Proxy
		if d > 0 {
			if proxy, err = netdelay.Start(fmt.Sprintf("127.0.0.1:%d", srv.Port()), d); err != nil {
				return err
			}
		}
		for _, w := range c.workers {
			r, rows, err := fleetPhase(ctx, c, srv, tmp, w, proxy)
			if err != nil {
				if proxy != nil {
					proxy.Close()
				}
				return fmt.Errorf("phase with %d workers, %s each way: %w", w, d, err)
			}
			results = append(results, r)
			if i > 0 {
				continue
			}
			// The raw baseline, once per W, writes directly: it is what
			// the rows cost the server, for the bytes and the WAL.
			raw, err := rawPhase(ctx, c, srv, w, rows)
			if err != nil {
				return fmt.Errorf("raw W=%d: %w", w, err)
			}
			raws = append(raws, raw)
		}
		if proxy != nil {
			proxy.Close()
		}
	}
	results = append(results, raws...)
	printTable(os.Stdout, c, single, httpCPU, results)
	return nil
}

// result is one phase's figures.
type result struct {
	name                 string
	workers              int           // processes (connections for the raw baseline)
	raw                  bool          // the raw baseline
	delay                time.Duration // each way to PostgreSQL
	steps                int
	wall                 time.Duration
	gaps, lags           []time.Duration // lags: commit → delivery
	between              []time.Duration // a round's tool.returned → the next round's tool.called
	workerLags           []time.Duration // of the events committed after the workers started
	appendLags           []time.Duration // append timestamp → delivery
	workerCPU, serverCPU time.Duration
	// serverByApp is the server's CPU from the workers' start to the last
	// run's end, by the application_name of its backends' connections
	// (backends.go); nil for the raw baseline.
	serverByApp map[string]time.Duration
	// workerSelfCPU is the workers' own CPU (no child process), read from
	// /proc just before they are told to stop; workerCPU less it is the
	// shell commands they ran.
	workerSelfCPU time.Duration
	// startCPU is what W workers' lives without work cost rath and the
	// server (workerStarts), in this phase's database after its runs.
	startCPU               time.Duration
	bytes, wal             int64
	staging                int64         // growth of the unlogged staging tables
	sessions               int64         // connections the server accepted
	submitCPU              time.Duration // the batch submit, whole
	rows                   int
	haveSubmit, haveWorker bool
	// writer sums the workers' event writer counters (the line each
	// prints at exit), when every worker printed one.
	writer     eventlog.Stats
	haveWriter bool
}

// writerLine is the line rath worker prints at exit about its event
// writer. (Older binaries also printed the staged appends' counts.)
var writerLine = regexp.MustCompile(`event writer: (\d+) commits, (\d+) appends, (\d+) events, (\d+) round trips(?:, (\d+) appends staged, (\d+) staged appends written)?(?:, (\d+) batches redone)?(?:, (\d+) (?:optimistic|late) commits, (\d+) missed)?(?:, (\d+) tree round trips)?`)

// writerStats reads a worker's event writer counters from its stderr.
func writerStats(stderr string) (eventlog.Stats, bool) {
	m := writerLine.FindStringSubmatch(stderr)
	if m == nil {
		return eventlog.Stats{}, false
	}
	var n [10]int64
	for i := range n {
		n[i], _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	return eventlog.Stats{Commits: n[0], Requests: n[1], Events: n[2], RoundTrips: n[3], Redone: n[6],
		Late: n[7], Missed: n[8], TreeRoundTrips: n[9]}, true
}

// singleSubmits times c.singles `rath submit` processes, each one run, on
// a database no worker reads: the CPU per run of a submit alone.
func singleSubmits(ctx context.Context, c config, srv *pgtest.Server, tmp string) (time.Duration, error) {
	if c.singles <= 0 {
		return 0, nil
	}
	dsn, err := srv.CreateDatabase(ctx, "fleet_singles")
	if err != nil {
		return 0, err
	}
	dir := filepath.Join(tmp, "singles")
	if _, err := rath(ctx, c.rath, "", "--dir", dir, "--dsn", dsn, "migrate", "up"); err != nil {
		return 0, err
	}
	ws := filepath.Join(tmp, "singles-ws")
	os.MkdirAll(ws, 0o755)
	cas, err := writeCassettes(tmp, "single", 1, c.rounds)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for i := range c.singles {
		cpu, err := rath(ctx, c.rath, "", "--dir", dir, "--dsn", dsn, "submit", "--cassette", cas[0], "--workspace", ws,
			"--backend", "local", "--tools", "run_shell_command", fmt.Sprintf("single %d", i))
		if err != nil {
			return 0, err
		}
		total += cpu
	}
	return total / time.Duration(c.singles), nil
}

// fleetPhase submits c.runs runs in one batch on a fresh database and
// has w worker processes execute them. It returns the figures and the
// event rows written, for the raw baseline.
//
// With a proxy, every connection but the bench's own measuring one (the
// sizes, the WAL position, the commit timestamps) goes through it: the
// submit, the workers and the subscriber.
func fleetPhase(ctx context.Context, c config, srv *pgtest.Server, tmp string, w int, proxy *netdelay.Proxy) (result, []row, error) {
	var delay time.Duration
	var addr string
	if proxy != nil {
		delay, addr = proxy.Delay(), proxy.Addr()
	}
	res := result{name: phaseName(w, delay), workers: w, delay: delay, steps: c.runs * c.rounds, haveSubmit: true, haveWorker: true}
	name := dbName(w, delay)
	direct, err := srv.CreateDatabase(ctx, name)
	if err != nil {
		return res, nil, err
	}
	dsn, err := via(direct, addr)
	if err != nil {
		return res, nil, err
	}
	dir := filepath.Join(tmp, name)
	if _, err := rath(ctx, c.rath, "", "--dir", dir, "--dsn", dsn, "migrate", "up"); err != nil {
		return res, nil, err
	}
	cas, err := writeCassettes(tmp, name, c.runs, c.rounds)
	if err != nil {
		return res, nil, err
	}
	var batch bytes.Buffer
	for i, f := range cas {
		line, _ := json.Marshal(map[string]string{"prompt": fmt.Sprintf("run %d: run the commands", i), "cassette": f})
		batch.Write(append(line, '\n'))
	}
	ws := filepath.Join(tmp, name+"-ws")
	os.MkdirAll(ws, 0o755)

	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		return res, nil, err
	}
	defer conn.Close(ctx)
	if c.statements > 0 {
		if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()`); err != nil {
			return res, nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
	}
	before, err := snapshot(ctx, conn, srv)
	if err != nil {
		return res, nil, err
	}
	// The subscriber follows the log from its head, as a console or an
	// exporter would.
	opts := eventlog.Options{DSN: withAppName(dsn, subscriberApp)}
	if c.kek != "" {
		kek, err := keyring.LoadKEKFile(c.kek)
		if err != nil {
			return res, nil, err
		}
		opts.Sealer = keyring.New(kek, func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })
	}
	store, err := eventlog.Open(ctx, opts)
	if err != nil {
		return res, nil, err
	}
	defer store.Close()
	head, err := store.Head(ctx)
	if err != nil {
		return res, nil, err
	}
	sub := subscribe(ctx, store, head.Seq+1, c.runs)

	if res.submitCPU, err = rath(ctx, c.rath, batch.String(), "--dir", dir, "--dsn", dsn, "submit", "--batch", "-",
		"--workspace", ws, "--backend", "local", "--tools", "run_shell_command", "--max-rounds", strconv.Itoa(c.rounds+5)); err != nil {
		return res, nil, err
	}
	// The workers start once the subscriber has the submit's events, so
	// that their processes' start does not compete with its reading them.
	submitted, err := store.Head(ctx)
	if err != nil {
		return res, nil, err
	}
	if err := sub.reach(ctx, submitted.Seq, c.timeout); err != nil {
		return res, nil, err
	}

	running, err := backends(ctx, conn)
	if err != nil {
		return res, nil, err
	}
	start := time.Now()
	procs := make([]*exec.Cmd, w)
	for i := range procs {
		if procs[i], err = startWorker(ctx, c, dir, dsn, i, w, true); err != nil {
			return res, nil, err
		}
	}
	var last time.Time
	select {
	case last = <-sub.finished:
	case <-time.After(c.timeout):
		err = fmt.Errorf("the runs did not finish within %s", c.timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		var ran map[int]backend
		if ran, err = backends(ctx, conn); err == nil {
			res.serverByApp = cpuByApp(running, ran)
		}
	}
	for _, p := range procs {
		if own, perr := proccpu.Process(p.Process.Pid); perr == nil {
			res.workerSelfCPU += own
		}
		p.Process.Signal(syscall.SIGTERM)
	}
	for i, p := range procs {
		if werr := p.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("worker %d: %w\n%s", i, werr, p.Stderr)
		}
		if p.ProcessState != nil {
			res.workerCPU += p.ProcessState.UserTime() + p.ProcessState.SystemTime()
		}
		if st, ok := writerStats(p.Stderr.(*bytes.Buffer).String()); ok {
			res.writer.Commits += st.Commits
			res.writer.Requests += st.Requests
			res.writer.Events += st.Events
			res.writer.RoundTrips += st.RoundTrips
			res.writer.Redone += st.Redone
			res.writer.Late += st.Late
			res.writer.Missed += st.Missed
			res.writer.TreeRoundTrips += st.TreeRoundTrips
			res.haveWriter = true
		}
	}
	if err != nil {
		return res, nil, err
	}
	res.wall = last.Sub(start)
	after, err := snapshot(ctx, conn, srv)
	if err != nil {
		return res, nil, err
	}
	res.staging = after.staging - before.staging
	res.sessions = after.sessions - before.sessions
	res.bytes, res.wal, res.serverCPU = after.bytes-before.bytes, walDiff(ctx, conn, after.lsn, before.lsn), after.cpu-before.cpu
	if c.walRelations > 0 {
		if err := printWAL(ctx, conn, res.name, before.lsn, after.lsn, c.walRelations, res.steps); err != nil {
			return res, nil, err
		}
	}
	if res.startCPU, err = workerStarts(ctx, c, conn, srv, dir, dsn, w); err != nil {
		return res, nil, err
	}
	if c.statements > 0 {
		if err := printStatements(ctx, conn, res.name, c.statements, res.steps); err != nil {
			return res, nil, err
		}
	}
	rows := sub.stop()
	res.rows, res.appendLags = len(rows), sub.lags
	if res.lags, res.workerLags, err = commitLags(ctx, conn, rows, start); err != nil {
		return res, nil, err
	}
	res.gaps, res.between = roundGaps(rows), betweenSteps(rows)
	if failed := sub.failed(); failed > 0 {
		return res, nil, fmt.Errorf("%d of %d runs did not end done; the first: %s", failed, c.runs, sub.why)
	}
	return res, rows, nil
}

// pgState is what a phase is measured by: the database's size, the WAL
// position and the server's CPU so far.
type pgState struct {
	bytes   int64
	staging int64
	// sessions is pg_stat_database's count of connections to the
	// database: a backend process each, whose start the server pays for.
	sessions int64
	lsn      string
	cpu      time.Duration
}

func snapshot(ctx context.Context, conn *pgx.Conn, srv *pgtest.Server) (pgState, error) {
	var s pgState
	// The staging tables (UNLOGGED, emptied as they go: rows of appends
	// waiting for the lock's holder, events/staged.go) are counted apart:
	// their size is dead rows until a vacuum, not what the log keeps.
	err := conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relpersistence <> 'u'), 0)::bigint,
		COALESCE(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relpersistence = 'u'), 0)::bigint FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'`).Scan(&s.bytes, &s.staging)
	if err != nil {
		return s, fmt.Errorf("database size: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.sessions); err != nil {
		return s, fmt.Errorf("sessions: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s.lsn); err != nil {
		return s, fmt.Errorf("WAL position: %w", err)
	}
	s.cpu, err = proccpu.Tree(srv.PID())
	return s, err
}

func walDiff(ctx context.Context, conn *pgx.Conn, after, before string) int64 {
	var d float64
	if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)`, after, before).Scan(&d); err != nil {
		return -1
	}
	return int64(d)
}

// writeCassettes writes one scripted cassette per run (a worker keeps
// one position per cassette file): rounds replies asking for a shell
// command, then an answer.
func writeCassettes(tmp, name string, runs, rounds int) ([]string, error) {
	type call struct {
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	type response struct {
		Content   string `json:"content,omitempty"`
		ToolCalls []call `json:"tool_calls,omitempty"`
	}
	var rs []response
	for i := range rounds {
		rs = append(rs, response{Content: fmt.Sprintf("Round %d: listing the workspace.", i+1),
			ToolCalls: []call{{ID: fmt.Sprintf("c%d", i+1), Name: "run_shell_command", Arguments: map[string]any{"cmd": fmt.Sprintf("echo round %d; ls", i+1)}}}})
	}
	rs = append(rs, response{Content: "Done: every round ran."})
	b, err := json.Marshal(map[string]any{"scripted": true, "description": "fleetbench", "responses": rs})
	if err != nil {
		return nil, err
	}
	d := filepath.Join(tmp, name+"-cassettes")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	out := make([]string, runs)
	for i := range out {
		out[i] = filepath.Join(d, fmt.Sprintf("run%d.json", i))
		if err := os.WriteFile(out[i], b, 0o644); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rath runs the binary with stdin and returns the CPU (user + system)
// its process used.
func rath(ctx context.Context, bin, stdin string, argv ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("rath %s: %w\n%s", strings.Join(redactDSN(argv), " "), err, stderr.String())
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

func redactDSN(argv []string) []string {
	out := slices.Clone(argv)
	for i := range out {
		if i > 0 && out[i-1] == "--dsn" {
			out[i] = "DSN"
		}
	}
	return out
}

// printStatements prints the phase's most expensive statements by total
// planning and execution time (pg_stat_statements, reset when the phase
// began), per step: where the server's share of a step goes. A statement
// planned at about every call is one the server replans each time (a
// custom plan it judged cheaper than the cached generic one).
func printStatements(ctx context.Context, conn *pgx.Conn, phase string, n, steps int) error {
	rows, err := conn.Query(ctx, `SELECT total_exec_time, total_plan_time, calls, plans, rows, regexp_replace(query, '\s+', ' ', 'g')
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time + total_plan_time DESC LIMIT $1`, n)
	if err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	defer rows.Close()
	fmt.Fprintf(os.Stderr, "%s: top %d statements (exec ms/step, plan ms/step, calls/step, plans/call, rows/call, statement)\n", phase, n)
	for rows.Next() {
		var exec, plan float64
		var calls, plans, nrows int64
		var query string
		if err := rows.Scan(&exec, &plan, &calls, &plans, &nrows, &query); err != nil {
			return err
		}
		if len(query) > 100 {
			query = query[:100] + "…"
		}
		perCall := func(n int64) float64 {
			if calls == 0 {
				return 0
			}
			return float64(n) / float64(calls)
		}
		fmt.Fprintf(os.Stderr, "  %8.3f %8.3f %7.2f %5.2f %7.1f  %s\n", exec/float64(steps), plan/float64(steps),
			float64(calls)/float64(steps), perCall(plans), perCall(nrows), query)
	}
	return rows.Err()
}
