package local_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
)

// orphanHelperEnv makes the test binary act as a rath process that runs
// one long command through the local backend (see TestHelper_LongCommand).
const orphanHelperEnv = "RATH_LOCAL_ORPHAN_HELPER"

// TestHelper_LongCommand is not a test: run with orphanHelperEnv set to a
// workspace, it starts a background sleep and a foreground one and blocks.
func TestHelper_LongCommand(t *testing.T) {
	dir := os.Getenv(orphanHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestExec_KilledWithRath")
	}
	sb, err := (&local.Backend{}).Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// The background sleep is a grandchild of rath: a parent-death signal
	// on the shell alone would not reach it.
	sb.Exec(context.Background(), sandbox.ExecRequest{
		Command: "sleep 600 & echo $! > bg.pid; sleep 600",
		Timeout: 10 * time.Minute,
	})
}

// When rath is SIGKILLed, the commands it started through the local
// backend, and their background jobs, die with it.
func TestExec_KilledWithRath(t *testing.T) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestHelper_LongCommand$", "-test.count=1")
	helper.Env = append(os.Environ(), orphanHelperEnv+"="+dir)
	var out bytes.Buffer
	helper.Stdout, helper.Stderr = &out, &out
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "bg.pid")
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			helper.Process.Kill()
			helper.Wait()
			t.Fatalf("the helper did not start its command: %s", out.Bytes())
		}
		if data, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(data, []byte("\n")) {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !sleeping(pid) {
		t.Fatalf("pid %d is not the background sleep", pid)
	}
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	for deadline := time.Now().Add(10 * time.Second); sleeping(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the background sleep (pid %d) outlived the killed rath by 10 s", pid)
		}
	}
}

// sleeping reports whether pid is a live (not zombie) sleep process.
func sleeping(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return strings.Contains(s, "(sleep)") && i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}
