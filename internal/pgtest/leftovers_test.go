package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/internal/pgtest"
)

// leaveEnv makes the test binary start a server, print its directory and
// exit without stopping it, as a test that calls os.Exit does.
const leaveEnv = "RATH_PGTEST_LEAVE"

func leaveAServer() int {
	srv, err := pgtest.Start(context.Background(), pgtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(filepath.Dir(srv.DataDir()))
	return 0
}

// Start removes the directories of servers whose processes died without
// stopping them, and of servers made before directories had an owner
// (older than a minute), and keeps those of live processes: a running
// server of this process, and a directory without an owner that may be
// being made this instant.
func TestStart_RemovesWhatDeadProcessesLeft(t *testing.T) {
	ctx := t.Context()
	// Not t.TempDir: its parent is closed to the postgres user, which
	// the servers run as when the tests run as root.
	tmp, err := os.MkdirTemp("", "pgtest-leftovers-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	live, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaveEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child: %v", err)
	}
	left := strings.TrimSpace(string(out))
	if filepath.Dir(left) != tmp {
		t.Fatalf("the child's server is in %q, want a directory in %s", left, tmp)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the child left nothing behind to remove: %v", err)
	}
	old, young := filepath.Join(tmp, "rath-pgtest-old"), filepath.Join(tmp, "rath-pgtest-young")
	for _, d := range []string{old, young} {
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	anHourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, anHourAgo, anHourAgo); err != nil {
		t.Fatal(err)
	}

	next, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	for dir, want := range map[string]bool{left: false, old: false, young: true, filepath.Dir(live.DataDir()): true, filepath.Dir(next.DataDir()): true} {
		_, err := os.Stat(dir)
		if got := err == nil; got != want {
			t.Errorf("%s there after a Start = %v, want %v", dir, got, want)
		}
	}
	if err := live.Exec(ctx, "postgres", "SELECT 1"); err != nil {
		t.Errorf("the live server after another's Start: %v", err)
	}
}
