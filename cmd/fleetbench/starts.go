package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/proccpu"
)

// startWorker starts worker i of w: `rath worker` on dsn with its own
// directory under dir, its stderr kept for its event writer's counters,
// and with profile, its CPU profile written under -cpuprofile's directory.
func startWorker(ctx context.Context, c config, dir, dsn string, i, w int, profile bool) (*exec.Cmd, error) {
	p := exec.CommandContext(ctx, c.rath, "--dir", filepath.Join(dir, fmt.Sprintf("worker%d", i)), "--dsn", dsn,
		"worker", "--verbose", "--backends", "local", "--concurrency", strconv.Itoa(c.concurrency))
	p.Stderr = &bytes.Buffer{}
	p.Env = os.Environ()
	if profile && c.cpuProfiles != "" {
		p.Env = append(p.Env, "RATH_CPU_PROFILE="+filepath.Join(c.cpuProfiles, fmt.Sprintf("worker%d-W%d.pprof", i, w)))
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// workerStarts measures what a phase's workers cost rath and the server
// beyond their runs: w workers start on the phase's database once its
// queue is empty, run until each has beaten its second heartbeat (it
// registered, started its job client and was idle until then, about
// 0.4 s), and stop. A fleet's processes live far longer than a phase, so
// a phase's CPU a step less this is what the fleet spends a step once
// started. conn reaches the database directly.
func workerStarts(ctx context.Context, c config, conn *pgx.Conn, srv *pgtest.Server, dir, dsn string, w int) (time.Duration, error) {
	server0, err := proccpu.Tree(srv.PID())
	if err != nil {
		return 0, err
	}
	procs := make([]*exec.Cmd, 0, w)
	stopAll := func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
		}
	}
	for i := range w {
		p, err := startWorker(ctx, c, filepath.Join(dir, "starts"), dsn, i, w, false)
		if err != nil {
			stopAll()
			return 0, err
		}
		procs = append(procs, p)
	}
	deadline := time.Now().Add(c.timeout)
	for {
		var beaten int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM fleet_workers WHERE heartbeat_at > started_at + 300000000`).Scan(&beaten); err != nil {
			stopAll()
			return 0, err
		}
		if beaten >= w {
			break
		}
		if time.Now().After(deadline) {
			stopAll()
			return 0, fmt.Errorf("%d of %d idle workers beat a second heartbeat within %s", beaten, w, c.timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopAll()
	var rathCPU time.Duration
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			return 0, fmt.Errorf("idle worker %d: %w\n%s", i, err, p.Stderr)
		}
		rathCPU += p.ProcessState.UserTime() + p.ProcessState.SystemTime()
	}
	server1, err := proccpu.Tree(srv.PID())
	if err != nil {
		return 0, err
	}
	return rathCPU + server1 - server0, nil
}
