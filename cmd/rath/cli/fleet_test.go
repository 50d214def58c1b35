package cli

import (
	"bufio"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/fleet"
)

// submit, worker, wait and runs through the CLI: runs submitted in one
// process are executed by a worker process, recorded with its name, and
// replay; the worker stops cleanly on SIGTERM.
func TestFleet_SubmitWorkerWait(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			store := []string{"--dir", dir}
			if backend == "postgres" {
				_, dsn := newDatabase(t)
				store = append(store, "--dsn", dsn)
				if out := mustRun(t, dir, "--dsn", dsn, "migrate", "up"); !strings.Contains(out, "its job queue (River) is at version ") {
					t.Fatalf("migrate up did not create the job queue's tables:\n%s", out)
				}
			}
			work := filepath.Join(t.TempDir(), "ws")
			os.MkdirAll(work, 0o755)
			var ids []string
			for i := range 3 {
				// A worker process keeps one position per cassette file:
				// one file per run.
				cas := filepath.Join(t.TempDir(), fmt.Sprintf("cassette%d.json", i))
				os.WriteFile(cas, []byte(cassette), 0o644)
				out := mustRun(t, dir, append(store[2:], "submit", "--cassette", cas, "--workspace", work, "--tools", "write_workspace_file,run_shell_command", "write", "a", "file")...)
				ids = append(ids, strings.TrimSpace(out))
			}
			runs := decodeJSON[[]runView](t, mustRun(t, dir, append(store[2:], "runs", "--json")...))
			if len(runs) != 3 || runs[0].Status != "queued" {
				t.Fatalf("before a worker: runs = %+v", runs)
			}
			w := execpkg.Command(os.Args[0], append(store, "worker", "--lease", "2s", "--backends", "local")...)
			w.Env = append(os.Environ(), mainEnv+"=1")
			stderr, _ := w.StderrPipe()
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Process.Kill()
			line, _ := bufio.NewReader(stderr).ReadString('\n')
			if !strings.Contains(line, "worker ") {
				t.Fatalf("worker said %q", line)
			}
			if r := rathCLI(t, dir, append(store[2:], append([]string{"wait", "--timeout", "2m"}, ids...)...)...); r.code != 0 {
				for _, v := range decodeJSON[[]runView](t, mustRun(t, dir, append(store[2:], "runs", "--json")...)) {
					t.Logf("%s %s %s", v.ID, v.Status, v.Error)
				}
			}
			out := mustRun(t, dir, append(store[2:], append([]string{"wait", "--timeout", "2m"}, ids...)...)...)
			for _, id := range ids {
				if !strings.Contains(out, id+"\tdone") {
					t.Fatalf("wait: %s", out)
				}
			}
			runs = decodeJSON[[]runView](t, mustRun(t, dir, append(store[2:], "runs", "--json")...))
			for _, r := range runs {
				if r.Status != "done" || r.Worker == "" || r.Workflow != runWorkflow {
					t.Fatalf("after the worker: run %+v", r)
				}
			}
			if out := mustRun(t, dir, append(store[2:], "replay", ids[0])...); !strings.Contains(out, "reproduced: ") {
				t.Fatalf("replay: %s", out)
			}
			// The idle worker is listed, holding nothing.
			if ws := decodeJSON[[]fleet.WorkerInfo](t, mustRun(t, dir, append(store[2:], "workers", "--json")...)); len(ws) != 1 || !ws[0].Live || len(ws[0].Runs) != 0 {
				t.Fatalf("workers with one idle worker: %+v", ws)
			}
			w.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- w.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("worker after SIGTERM: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("worker did not stop on SIGTERM")
			}
			// A queued run canceled while no worker runs.
			queued := strings.TrimSpace(mustRun(t, dir, append(store[2:], "submit", "--cassette", filepath.Join(t.TempDir(), "none.json"), "x")...))
			if out := mustRun(t, dir, append(store[2:], "cancel", queued, "--reason", "changed my mind")...); !strings.Contains(out, "canceled") {
				t.Fatalf("cancel: %s", out)
			}
			if r := rathCLI(t, dir, append(store[2:], "cancel", queued)...); r.code != ExitFailure || !strings.Contains(r.stderr, "already finished") {
				t.Fatalf("cancel twice: exit %d %s", r.code, r.stderr)
			}
			if r := rathCLI(t, dir, append(store[2:], "wait", queued)...); r.code != ExitFailure || !strings.Contains(r.stdout, queued+"\tcanceled") ||
				!strings.Contains(r.stderr, "run "+queued+" was canceled: changed my mind") || strings.Contains(r.stderr, "a run failed") {
				t.Fatalf("wait for a canceled run: exit %d %s%s", r.code, r.stdout, r.stderr)
			}
			if ws := decodeJSON[[]fleet.WorkerInfo](t, mustRun(t, dir, append(store[2:], "workers", "--json", "--all")...)); len(ws) != 0 {
				t.Fatalf("workers after the only one stopped: %+v", ws)
			}
			// A run that failed makes wait fail. A second run's workspace is
			// gone by the time a worker takes it: it fails with that reason
			// and no tool runs anywhere else. Both are queued before the
			// worker starts, so it cannot take the second while the
			// workspace still exists.
			bad := strings.TrimSpace(mustRun(t, dir, append(store[2:], "submit", "--workflow", "nosuch", "x")...))
			gone := filepath.Join(t.TempDir(), "gone")
			os.MkdirAll(gone, 0o755)
			cas := filepath.Join(t.TempDir(), "cassette.json")
			os.WriteFile(cas, []byte(cassette), 0o644)
			lost := strings.TrimSpace(mustRun(t, dir, append(store[2:], "submit", "--cassette", cas, "--workspace", gone, "--tools", "write_workspace_file", "write", "a", "file")...))
			os.RemoveAll(gone)
			w2 := execpkg.Command(os.Args[0], append(store, "worker", "--lease", "2s", "--backends", "local")...)
			w2.Env = append(os.Environ(), mainEnv+"=1")
			if err := w2.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { w2.Process.Signal(syscall.SIGTERM); w2.Wait() }()
			r := rathCLI(t, dir, append(store[2:], "wait", "--timeout", "2m", bad)...)
			if r.code != ExitFailure || !strings.Contains(r.stdout, bad+"\tfailed") {
				t.Fatalf("wait for a failing run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := rathCLI(t, dir, append(store[2:], "wait", "--timeout", "2m", lost)...); r.code != ExitFailure || !strings.Contains(r.stdout, lost+"\tfailed") {
				t.Fatalf("wait for a run whose workspace is gone: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			reasons := map[string]string{}
			for _, v := range decodeJSON[[]runView](t, mustRun(t, dir, append(store[2:], "runs", "--json")...)) {
				reasons[v.ID] = v.Error
			}
			if !strings.Contains(reasons[bad], `does not know workflow "nosuch"`) {
				t.Fatalf("the failed run's reason: %q", reasons[bad])
			}
			if !strings.Contains(reasons[lost], "is not reachable from this worker") {
				t.Fatalf("the lost workspace's run: %q", reasons[lost])
			}
			if _, err := os.Stat(gone); !os.IsNotExist(err) {
				t.Fatalf("a tool ran and recreated the workspace: %v", err)
			}
		})
	}
}

// A submit run inside another program (Run, not Main) leaves that
// program's garbage collector as it found it: only a rath process of its
// own tunes its collector for a submit (cli.go, ownsProcess).
func TestSubmit_LeavesAnEmbeddersCollectorAlone(t *testing.T) {
	// Not parallel: it reads the process's GC percent.
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	mustRun(t, t.TempDir(), "submit", "--cassette", filepath.Join(t.TempDir(), "none.json"), "x")
	if after := debug.SetGCPercent(before); after != before {
		t.Fatalf("GC percent %d after an in-process submit, was %d", after, before)
	}
}

func TestCollectLess_OnlyInAProcessItOwnsAndWithoutGOGC(t *testing.T) {
	// Not parallel: it sets the process's GC percent and environment.
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	defer debug.SetGCPercent(before)
	for _, c := range []struct {
		name   string
		owns   bool
		gogc   string
		wanted int
	}{
		{"the CLI is the process", true, "", workerGCPercent},
		{"the operator set GOGC", true, "50", before},
		{"a program runs the CLI", false, "", before},
	} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(before)
			t.Setenv("GOGC", c.gogc)
			(&app{ownsProcess: c.owns}).collectLess(workerGCPercent)
			if got := debug.SetGCPercent(before); got != c.wanted {
				t.Fatalf("GC percent %d, want %d", got, c.wanted)
			}
		})
	}
}
