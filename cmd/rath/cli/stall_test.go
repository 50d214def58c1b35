package cli

import (
	"os"
	execpkg "os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
)

// A process stopped (SIGSTOP) while it holds PostgreSQL's chain lock
// inside its append transaction stops the other writers for seconds,
// not for good: the server ends its idle transaction, the others go on,
// and the stopped writer's append fails once it runs again, writing
// nothing. The log verifies.
func TestPostgres_StoppedWriterHoldingTheLock(t *testing.T) {
	t.Parallel()
	_, dsn := newDatabase(t)
	dir := t.TempDir()
	mustRun(t, dir, "--dsn", dsn, "migrate", "up")
	mustRun(t, dir, "--dsn", dsn, "new", "before")
	stalled := execpkg.Command(os.Args[0], "--dir", t.TempDir(), "--dsn", dsn, "new", "stalled")
	stalled.Env = append(os.Environ(), mainEnv+"=1", eventlog.DebugStopHoldingLockEnv+"=1")
	var errb strings.Builder
	stalled.Stderr = &errb
	if err := stalled.Start(); err != nil {
		t.Fatal(err)
	}
	defer stalled.Process.Kill()
	// Wait until it stopped itself, holding the lock.
	for deadline := time.Now().Add(time.Minute); ; {
		b, _ := os.ReadFile("/proc/" + itoa(stalled.Process.Pid) + "/stat")
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "T" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer did not stop holding the lock: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if r := rathExit(t, nil, "--dir", t.TempDir(), "--dsn", dsn, "new", "goes on"); r.code != 0 {
		t.Fatalf("a writer while another is stopped holding the lock: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("another writer went on %v after the holder stopped", time.Since(start).Round(time.Millisecond))
	stalled.Process.Signal(syscall.SIGCONT)
	if err := stalled.Wait(); err == nil {
		t.Fatalf("the stopped writer's append succeeded after its session was ended\n%s", errb.String())
	}
	out := mustRun(t, dir, "--dsn", dsn, "events", "--json")
	if strings.Contains(out, "stalled") || !strings.Contains(out, "goes on") {
		t.Fatalf("events:\n%s", out)
	}
	mustRun(t, dir, "--dsn", dsn, "verify")
}

func itoa(n int) string { return strconv.Itoa(n) }
