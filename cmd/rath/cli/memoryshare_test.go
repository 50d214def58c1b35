package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startRath starts the test binary as rath with argv in the background
// and returns it with a reader of its stderr; it is killed at cleanup.
func startRath(t *testing.T, argv ...string) (*execpkg.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := execpkg.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(stderr)
}

// The console and a worker stay up on a store while other processes use
// its memory: `rath replay`, `rath demo` and `rath memory recall` all
// succeed. Before, the console held the memory index exclusively from its
// first memory search until it exited, and every other process waited
// five seconds and failed with "index in use by another process".
func TestMemory_SharedByLongLivedProcesses(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	mustRun(t, dir, "demo")
	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(runs) != 1 {
		t.Fatalf("runs after the demo: %+v", runs)
	}
	mustRun(t, dir, "memory", "add", "user/ana", "ana prefers short answers")

	_, serveErr := startRath(t, "--dir", dir, "serve", "--addr", "127.0.0.1:0")
	base := servedURL(t, serveErr)
	search := func() {
		t.Helper()
		res, err := http.Get(base + "api/memory/search?ns=user/ana&q=" + url.QueryEscape("short answers"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "ana prefers") {
			t.Fatalf("console memory search: %s %s", res.Status, body)
		}
	}
	search() // the console opens the memory index

	worker, workerErr := startRath(t, "--dir", dir, "worker", "--lease", "2s")
	if line, _ := workerErr.ReadString('\n'); !strings.Contains(line, "worker ") {
		t.Fatalf("worker said %q", line)
	}
	// The worker logs each run it takes and how it finished.
	workerLog := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(workerErr)
		workerLog <- string(b)
	}()
	// The worker uses memory too: a queued run that recalls and commits.
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(memoryCassette), 0o644)
	queued := strings.TrimSpace(rathProc(t, nil, "--dir", dir, "submit", "--cassette", cas, "--memory", "user/ana", "how should I answer ana"))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i, argv := range [][]string{
		{"replay", runs[0].ID},
		{"memory", "recall", "user/ana", "short answers"},
		{"demo"},
		{"memory", "recall", "user/ana", "answers"},
	} {
		if ctx.Err() != nil {
			t.Fatal("timed out")
		}
		out := rathProc(t, nil, append([]string{"--dir", dir}, argv...)...)
		if argv[0] == "memory" && !strings.Contains(out, "ana prefers short answers") {
			t.Fatalf("rath %s: %s", strings.Join(argv, " "), out)
		}
		if i%2 == 0 {
			search() // the console uses memory again between them
		}
	}
	if out := rathProc(t, nil, "--dir", dir, "wait", "--timeout", "2m", queued); !strings.Contains(out, queued+"\tdone") {
		t.Fatalf("the worker's memory run: %s", out)
	}
	worker.Process.Signal(syscall.SIGTERM)
	select {
	case log := <-workerLog:
		if !strings.Contains(log, "run "+queued+": taken") || !strings.Contains(log, "run "+queued+": finished: done") {
			t.Errorf("the worker's log does not tell the run:\n%s", log)
		}
	case <-ctx.Done():
		t.Error("the worker did not stop on SIGTERM")
	}
	// What the worker committed is recalled by another process.
	if out := rathProc(t, nil, "--dir", dir, "memory", "recall", "user/ana", "Bonjour"); !strings.Contains(out, "Bonjour Ana") {
		t.Fatalf("recall of the worker's commit: %s", out)
	}
}
