package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/session"
)

var (
	pgServer *pgtest.Server
	pgDBs    atomic.Int64
)

// newDatabase makes an empty database on the shared server.
func newDatabase(t *testing.T) (name, dsn string) {
	t.Helper()
	name = fmt.Sprintf("cli%d", pgDBs.Add(1))
	dsn, err := pgServer.CreateDatabase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return name, dsn
}

// Every command works on a PostgreSQL store as on a directory, and copy
// moves a log both ways with the same head on each side.
func TestPostgres_CommandsAndCopy(t *testing.T) {
	t.Parallel()
	_, dsn := newDatabase(t)
	dir := t.TempDir() // per-process files only
	pg := func(argv ...string) string { return mustRun(t, dir, append([]string{"--dsn", dsn}, argv...)...) }

	if r := rathCLI(t, dir, "--dsn", dsn, "sessions"); r.code != ExitFailure || !strings.Contains(r.stderr, "no rath store in PostgreSQL database") {
		t.Fatalf("sessions on an empty database: exit %d\n%s", r.code, r.stderr)
	}
	id := strings.TrimSpace(pg("new", "hello from postgres"))
	fork := strings.TrimSpace(pg("fork", id))
	pg("append", fork, "--role", "assistant", "a reply")
	work := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(work, 0o755)
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(cassette), 0o644)
	pg("run", "--cassette", cas, "--workspace", work, "--tools", "write_workspace_file,run_shell_command", "write", "a", "file")
	runs := decodeJSON[[]runView](t, pg("runs", "--json"))
	if len(runs) != 1 || runs[0].Status != "done" {
		t.Fatalf("runs = %+v", runs)
	}
	if out := pg("replay", runs[0].ID); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay on postgres: %s", out)
	}
	if out := pg("show", fork); !strings.Contains(out, "a reply") {
		t.Fatalf("show: %s", out)
	}
	pg("rebuild")
	head := decodeJSON[verifyView](t, pg("verify", "--json"))
	if !head.OK || head.Head == "" || head.Projections == nil {
		t.Fatalf("verify = %+v", head)
	}

	// To a directory, and from there to a second database: one head.
	copied := t.TempDir()
	out := mustRun(t, dir, "copy", "--from", dsn, "--to", copied)
	if !strings.Contains(out, "head on both     "+head.Head) {
		t.Fatalf("copy to a directory: %s", out)
	}
	if v := decodeJSON[verifyView](t, mustRun(t, copied, "verify", "--json")); v.Head != head.Head || !v.OK {
		t.Fatalf("the copy verifies to %+v, the source to %s", v, head.Head)
	}
	_, dsn2 := newDatabase(t)
	v := decodeJSON[copyView](t, mustRun(t, dir, "copy", "--from", copied, "--to", dsn2, "--json"))
	if v.Head != head.Head || strings.Contains(v.To, "postgres://") {
		t.Fatalf("copy back = %+v, want head %s and no DSN echoed", v, head.Head)
	}
	if v := decodeJSON[verifyView](t, mustRun(t, dir, "--dsn", dsn2, "verify", "--json")); v.Head != head.Head {
		t.Fatalf("second database verifies to %s, want %s", v.Head, head.Head)
	}
	if out := mustRun(t, dir, "--dsn", dsn2, "show", fork); !strings.Contains(out, "a reply") {
		t.Fatalf("show on the copy: %s", out)
	}
	// A destination that holds a log is refused and left alone.
	if r := rathCLI(t, dir, "copy", "--from", copied, "--to", dsn2); r.code != ExitFailure || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("copy onto a full store: exit %d\n%s", r.code, r.stderr)
	}
}

// A wrong DSN fails at once with the host and port, never the password.
func TestPostgres_BadDSN(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	closed := freeLoopbackPort(t)
	u := url.URL{Scheme: "postgres", User: url.UserPassword("rath", "s3cret-pw"), Host: closed, Path: "/rath", RawQuery: "connect_timeout=5"}
	cases := []struct {
		name, dsn string
		want      []string
	}{
		{"unreachable", u.String(), []string{closed}},
		{"no such database", strings.Replace(pgServer.DSN("nosuchdb"), "postgres@", "postgres:s3cret-pw@", 1), []string{fmt.Sprint(pgServer.Port()), "nosuchdb"}},
		{"not a URL", "host=127.0.0.1 password=s3cret-pw", []string{"--dsn must be a postgres://"}},
		{"malformed", "postgres://rath:s3cret-pw@127.0.0.1:notaport/db", []string{"DSN"}},
	}
	for _, tc := range cases {
		for _, argv := range [][]string{{"sessions"}, {"new", "x"}} {
			r := rathCLI(t, dir, append([]string{"--dsn", tc.dsn}, argv...)...)
			if r.code == ExitOK {
				t.Fatalf("%s: %s succeeded", tc.name, argv[0])
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("%s: %s: stderr lacks %q:\n%s", tc.name, argv[0], w, r.stderr)
				}
			}
			if strings.Contains(r.stderr+r.stdout, "s3cret-pw") {
				t.Errorf("%s: %s echoed the password:\n%s", tc.name, argv[0], r.stderr)
			}
		}
	}
}

func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A database migrated by a newer rath is refused, naming both versions,
// and nothing is written to it.
func TestPostgres_NewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	name, dsn := newDatabase(t)
	dir := t.TempDir()
	mustRun(t, dir, "--dsn", dsn, "new", "hi")
	if err := pgServer.Exec(t.Context(), name, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, true)`); err != nil {
		t.Fatal(err)
	}
	r := rathCLI(t, dir, "--dsn", dsn, "new", "again")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "schema version 99") || !strings.Contains(r.stderr, fmt.Sprintf("this binary's %d", latestSchema(t))) {
		t.Fatalf("newer schema: exit %d\n%s", r.code, r.stderr)
	}
	if err := pgServer.Exec(t.Context(), name, `DELETE FROM goose_db_version WHERE version_id = 99`); err != nil {
		t.Fatal(err)
	}
	if n := len(decodeJSON[[]sessionView](t, mustRun(t, dir, "--dsn", dsn, "sessions", "--json"))); n != 1 {
		t.Fatalf("%d sessions after the refused command, want 1", n)
	}
}

func latestSchema(t *testing.T) int64 {
	ms, err := rath.MigrationStatus(t.Context(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	return ms[len(ms)-1].Version
}

// The server goes away in the middle of a run: the run fails cleanly, and
// once the server is back `rath resume` finishes it, each tool effect once.
func TestPostgres_ServerGoneMidRunThenResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	dsn, err := srv.CreateDatabase(ctx, "rath")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.log")
	var killed atomic.Bool
	agent := tallyWith(effects, func(n int) error {
		if n == 1 && killed.CompareAndSwap(false, true) {
			srv.Kill() // mid-run, before this call's result is recorded
			return errors.New("the database went away")
		}
		return nil
	})
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: filepath.Join(dir, "local"), DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, "tally to three")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.Start(ctx, "tally", agent, input, rath.WithRunID("run-pg-away"))
	rt.Close()
	if err == nil || !killed.Load() {
		t.Fatalf("the run survived the server's death: %v", err)
	}
	t.Logf("run failed as the server went away: %v", err)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
		rt.Register("tally", tallyWith(effects, func(int) error { return nil }))
		return nil
	}}
	mine := func(argv ...string) result {
		var out, errb strings.Builder
		code := Run(ctx, cfg, append([]string{"--dir", filepath.Join(dir, "local"), "--dsn", dsn}, argv...), strings.NewReader(""), &out, &errb)
		return result{stdout: out.String(), stderr: errb.String(), code: code}
	}
	if r := mine("resume", "run-pg-away"); r.code != ExitOK {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(effects)
	if got := string(b); got != "tally-0\ntally-1\ntally-2\n" {
		t.Fatalf("effects = %q, want each call once", got)
	}
	if r := mine("verify"); r.code != ExitOK {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := mine("replay", "run-pg-away"); r.code != ExitOK || !strings.Contains(r.stdout, "reproduced: ") {
		t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// tallyWith is the tally workflow with its effect in file and a hook
// called as each tool call starts; a hook error fails the call before
// its effect.
func tallyWith(file string, before func(n int) error) flow.Workflow {
	tally, err := flow.NewTool("tally", "Tally, with a side effect.", func(_ context.Context, _ *session.Session, a tallyArgs) (string, error) {
		if err := before(a.N); err != nil {
			return "", err
		}
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "tally-%d\n", a.N)
		return fmt.Sprint("n=", a.N), err
	})
	if err != nil {
		panic(err)
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: tallyModel{}, Model: "tally"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		panic(err)
	}
	ag, err := flow.NewAgent("You tally.", p, flow.WithTools(tally))
	if err != nil {
		panic(err)
	}
	return ag
}
