package cli

import (
	"bytes"
	"database/sql"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

var stagedLine = regexp.MustCompile(`(\d+) appends staged, (\d+) staged appends written`)

// A `rath worker` started with RATH_STAGED_APPENDS=1 stages its appends
// while another party holds the chain lock (here the test, in an open
// transaction, while the model's reply is on its way), writes them once
// the lock is free, and finishes the run; the log verifies and the run
// replays, whole, in a bare environment.
func TestReplay_StagedFleetRunReplaysInABareEnvironment(t *testing.T) {
	t.Parallel()
	store := storeFor(t, "postgres")
	dsn := store[len(store)-1]
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}, Delay: 700 * time.Millisecond},
		modeltest.Reply{Content: "read it, staged"})
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644)
	env := userEnv(t, "", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-staged-0123456789", "OPENAI_DEFAULT_MODEL=m-staged",
		StagedAppendsEnv+"=1")
	sub := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "submit", "--workspace", ws, "--tools", "read_workspace_file", "read a.txt")...)
	if sub.code != 0 {
		t.Fatalf("submit: exit %d\n%s", sub.code, sub.stderr)
	}
	run := strings.TrimSpace(sub.stdout)

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := execpkg.Command(stockRath(t), append(append([]string(nil), store...), "worker", "--verbose", "--lease", "5s", "--backends", "local")...)
	w.Env = env
	var stderr bytes.Buffer
	w.Stderr = &stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	for deadline := time.Now().Add(2 * time.Minute); len(srv.Requests()) < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker made no model call")
		}
	}
	// The reply is 700 ms away: the appends that record it find the lock
	// held, and are staged. 1.5 s stays under the store's busy timeout,
	// so the worker's writes that are never staged only wait.
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := tx.QueryRow(`SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`).Scan(&one); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if r := rathEnv(t, env, append(append([]string(nil), store...), "wait", "--timeout", "2m", run)...); r.code != 0 || !strings.Contains(r.stdout, run+"\tdone") {
		t.Fatalf("wait: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.Process.Signal(syscall.SIGTERM)
	w.Wait()
	m := stagedLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("the worker printed no writer counters:\n%s", stderr.String())
	}
	if staged, _ := strconv.Atoi(m[1]); staged == 0 {
		t.Fatalf("the worker staged nothing while the lock was held:\n%s", stderr.String())
	}
	if written, _ := strconv.Atoi(m[2]); written == 0 {
		t.Fatalf("no staged append was written:\n%s", stderr.String())
	}
	srv.Close()
	if v := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "verify")...); v.code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", v.code, v.stdout, v.stderr)
	}
	if rep := replayBare(t, store, run); !rep.Finished {
		t.Fatalf("the staged run replays as unfinished: %+v", rep)
	}
}
