package fleet_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"

	"github.com/gorath/rath/internal/rathbin"
)

// rathBin is the rath command, built once per test binary and removed
// after the tests (TestMain).
var rathBin rathbin.Shared

// rathBinary returns the path of a rath binary built from this tree.
func rathBinary(t *testing.T) string {
	t.Helper()
	return rathBin.Path(t)
}

// syncBuffer is a worker's stderr, read while the worker writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRathWorker starts `rath worker` with args and returns it with its
// id (from its first line) and its stderr.
func startRathWorker(t *testing.T, dir string, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	return startRathWorkerEnv(t, dir, []string{"RATH_HOME=" + t.TempDir()}, args...)
}

// startRathWorkerEnv is startRathWorker with env added to the test's.
func startRathWorkerEnv(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(rathBinary(t), append([]string{"--dir", dir, "worker", "--backends", "local"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(pipe)
	line, _ := r.ReadString('\n')
	id, _, ok := strings.Cut(strings.TrimPrefix(line, "worker "), ":")
	if !strings.HasPrefix(line, "worker ") || !ok {
		t.Fatalf("rath worker said %q", line)
	}
	buf := &syncBuffer{}
	buf.Write([]byte(line))
	go func() { // keep the pipe drained
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			buf.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	return cmd, id, buf
}

// `rath worker --dead-after D` reaches the fleet: a rath worker started
// with --dead-after 5s (and a lease of a minute) holds a run inside a
// shell command while a second rath worker with --dead-after 300ms reaps;
// the second takes nothing from the live first. SIGKILLed, the first's
// run is taken over by the second once 5 s passed without a heartbeat,
// not 300 ms (the judge's) nor 2 s (the default), and finishes: the
// command in flight ran a second time, which it notices, and nothing
// after it ran twice.
func TestWorkerCLI_DeadAfterReachesTheFleet(t *testing.T) {
	t.Parallel()
	const deadAfter = 5 * time.Second
	dir, ws := t.TempDir(), t.TempDir()
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(`{"scripted": true, "responses": [
		{"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo run >> runs; test -f started && exit 0; touch started; sleep 60"}}]},
		{"content": "held, then done"}]}`), 0o644)
	sub := exec.Command(rathBinary(t), "--dir", dir, "submit", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command", "hold")
	sub.Env = append(os.Environ(), "RATH_HOME="+t.TempDir())
	out, err := sub.Output()
	if err != nil {
		t.Fatalf("submit: %v %s", err, out)
	}
	run := strings.TrimSpace(string(out))

	holder, holderID, _ := startRathWorker(t, dir, "--lease", "1m", "--dead-after", deadAfter.String())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first worker never started the command")
		}
	}
	_, _, judgeLog := startRathWorker(t, dir, "--lease", "1m", "--dead-after", "300ms")
	// Ten of the judge's DeadAfter and more than two of the holder's
	// heartbeats: a judge by its own bound expires the lease here.
	time.Sleep(3 * time.Second)
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if hs := leaseHolders(t, rt, run); len(hs) != 1 || hs[0] != holderID {
		t.Fatalf("the live worker's lease was taken: holders %v\n%s", hs, judgeLog)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()

	wait := exec.Command(rathBinary(t), "--dir", dir, "wait", "--timeout", "2m", run)
	wait.Env = sub.Env
	if out, err := wait.CombinedOutput(); err != nil {
		t.Fatalf("wait: %v %s\n%s", err, out, judgeLog)
	}
	var beat time.Time
	for _, l := range strings.Split(judgeLog.String(), "\n") {
		if _, since, ok := strings.Cut(l, "expired the lease of "+holderID+" (no heartbeat since "); ok {
			if beat, err = time.Parse(time.RFC3339Nano, strings.TrimSuffix(since, ")")); err != nil {
				t.Fatal(err)
			}
		}
	}
	var expired time.Time
	evs, err := rt.Store().ReadStream(t.Context(), events.LeaseStream(run), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		p, _ := ev.Decode()
		if l := p.(*events.RunLeased); l.Worker != holderID {
			expired = time.Unix(0, l.ExpiresAt)
			break
		}
	}
	if beat.IsZero() || expired.IsZero() {
		t.Fatalf("no expiry by heartbeat (last heartbeat %v, expiry %v); the judge's log:\n%s", beat, expired, judgeLog)
	}
	if silent := expired.Sub(beat); silent < deadAfter {
		t.Fatalf("the judge expired the lease %v after the last heartbeat, before the worker's --dead-after %v", silent, deadAfter)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "runs")); string(b) != "run\nrun\n" {
		t.Fatalf("the command ran %q, want twice (in flight at the crash, then resumed)", b)
	}
}
