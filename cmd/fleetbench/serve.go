package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/proccpu"
)

var (
	servingAt = regexp.MustCompile(`serving .* on (http://127\.0\.0\.1:\d+/)`)
	csrfMeta  = regexp.MustCompile(`name="rath-csrf" content="([0-9a-f]+)"`)
)

// httpSubmits times n single-run POST /api/runs requests to one `rath
// serve` process: the CPU its process spends per run, once it runs (a
// submit that pays no process start, no store open, no migration check).
func httpSubmits(ctx context.Context, c config, srv *pgtest.Server, tmp string, n int) (time.Duration, error) {
	if n <= 0 {
		return 0, nil
	}
	dsn, err := srv.CreateDatabase(ctx, "fleet_http")
	if err != nil {
		return 0, err
	}
	dir := filepath.Join(tmp, "http")
	if _, err := rath(ctx, c.rath, "", "--dir", dir, "--dsn", dsn, "migrate", "up"); err != nil {
		return 0, err
	}
	cas, err := writeCassettes(tmp, "http", 1, c.rounds)
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, c.rath, "--dir", dir, "--dsn", dsn, "serve", "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var base string
	sc := bufio.NewScanner(stderr)
	for base == "" && sc.Scan() {
		if m := servingAt.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		return 0, fmt.Errorf("rath serve printed no URL")
	}
	go io.Copy(io.Discard, stderr)
	res, err := http.Get(base)
	if err != nil {
		return 0, err
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfMeta.FindSubmatch(page)
	if m == nil {
		return 0, fmt.Errorf("no CSRF value in the console's page")
	}
	post := func(i int) error {
		body := fmt.Sprintf(`{"prompt": "http %d", "cassette": %q, "workspace": %q, "tools": "run_shell_command"}`, i, cas[0], filepath.Join(tmp, "http-ws"))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"api/runs", strings.NewReader(body))
		req.Header.Set("X-Rath-CSRF", string(m[1]))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST /api/runs: %s %s", res.Status, b)
		}
		return nil
	}
	// The first request opens the insert-only queue client: not timed.
	if err := post(-1); err != nil {
		return 0, err
	}
	before, err := proccpu.Process(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	for i := range n {
		if err := post(i); err != nil {
			return 0, err
		}
	}
	after, err := proccpu.Process(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return (after - before) / time.Duration(n), nil
}
