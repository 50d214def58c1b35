package proc_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/proc"
)

func sh(command string) proc.Command {
	return proc.Command{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", command}, Timeout: time.Minute}
}

func TestRun_ExitStatus(t *testing.T) {
	tests := []struct {
		command string
		exit    int
	}{
		{"exit 0", 0},
		{"exit 42", 42},
		{"kill -9 $$", -1},
		{"kill -TERM $$", -1},
	}
	for _, tt := range tests {
		res, err := proc.Run(t.Context(), sh(tt.command))
		if err != nil || res.ExitCode != tt.exit || res.TimedOut {
			t.Errorf("%q: exit %d timedOut %v err %v; want exit %d", tt.command, res.ExitCode, res.TimedOut, err, tt.exit)
		}
	}
}

func TestRun_Errors(t *testing.T) {
	c := sh("true")
	c.Timeout = 0
	if _, err := proc.Run(t.Context(), c); err == nil {
		t.Error("zero timeout accepted")
	}
	c = proc.Command{Path: filepath.Join(t.TempDir(), "missing"), Args: []string{"missing"}, Timeout: time.Second}
	if _, err := proc.Run(t.Context(), c); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing binary: %v", err)
	}
	c = sh("sleep 600")
	c.Timeout = 200 * time.Millisecond
	res, err := proc.Run(t.Context(), c)
	if !errors.Is(err, sandbox.ErrTimeout) || !res.TimedOut {
		t.Errorf("timeout: %+v %v", res, err)
	}
}

// A process that leaves the group (setsid) and keeps the pipes open must
// not keep Run waiting: after DrainGrace the pipes are closed under it.
func TestRun_EscapedProcessDoesNotBlock(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	start := time.Now()
	res, err := proc.Run(t.Context(), sh("setsid sh -c 'echo $$ > "+pidFile+"; exec sleep 30' & sleep 0.2; echo parent"))
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("Run waited %s for a process outside the group", elapsed)
	}
	if string(res.Stdout) != "parent\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

func TestRun_Stdin(t *testing.T) {
	c := sh("cat")
	c.Stdin = []byte("piped")
	res, err := proc.Run(t.Context(), c)
	if err != nil || string(res.Stdout) != "piped" {
		t.Errorf("cat = %q, %v", res.Stdout, err)
	}
	// Empty but non-nil stdin is an immediately closed pipe.
	c.Stdin = []byte{}
	if res, err = proc.Run(t.Context(), c); err != nil || len(res.Stdout) != 0 {
		t.Errorf("empty stdin: %q, %v", res.Stdout, err)
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("RATH_PROC_PASS", "host")
	t.Setenv("RATH_PROC_SECRET", "s3cret")
	got := proc.Env(
		map[string]string{"PATH": "/bin", "HOME": "/ws"},
		[]string{"RATH_PROC_PASS", "RATH_PROC_UNSET"},
		map[string]string{"HOME": "/backend"},
		map[string]string{"EXTRA": "1"},
	)
	want := []string{"EXTRA=1", "HOME=/backend", "PATH=/bin", "RATH_PROC_PASS=host"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
}
