package cli

import (
	"bytes"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

// A run submitted with an approval rule asks for a decision on a worker;
// a person approves it with `rath approve` while the worker is up, and
// the worker goes on with the run. It replays in a bare environment
// while it waits (to the end of its record, unfinished) and once done
// (whole), on both stores.
func TestReplay_FleetApprovalDecidedWhileOnAWorker(t *testing.T) {
	for _, backend := range replayStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}},
				modeltest.Reply{Content: "read it once approved"})
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := userEnv(t, "", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-fleet-0123456789", "OPENAI_DEFAULT_MODEL=m-fleet")
			rath := func(argv ...string) result {
				return rathEnv(t, env, append(append([]string(nil), store...), argv...)...)
			}
			sub := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "submit", "--workspace", ws, "--tools", "read_workspace_file",
				"--approve", "read_workspace_file", "read a.txt")...)
			if sub.code != 0 {
				t.Fatalf("submit: exit %d\n%s", sub.code, sub.stderr)
			}
			run := strings.TrimSpace(sub.stdout)
			w := execpkg.Command(stockRath(t), append(append([]string(nil), store...), "worker", "--lease", "2s", "--backends", "local")...)
			w.Env = env
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Process.Kill(); w.Wait() })
			var id string
			for deadline := time.Now().Add(2 * time.Minute); id == ""; time.Sleep(100 * time.Millisecond) {
				if pend := decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout); len(pend) == 1 {
					id = pend[0].ID
				}
				if time.Now().After(deadline) {
					t.Fatal("the worker's run never asked for the approval")
				}
			}
			if rep := replayBare(t, store, run); rep.Finished || len(rep.Waiting) != 1 || rep.Waiting[0] != id {
				t.Fatalf("replay of the run waiting on the worker: %+v", rep)
			}
			if r := rath("approve", id, "--as", "ann"); r.code != 0 {
				t.Fatalf("approve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if r := rath("wait", "--timeout", "2m", run); r.code != 0 || !strings.Contains(r.stdout, run+"\tdone") {
				t.Fatalf("wait after the approval: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "alpha") {
				t.Fatalf("the approved call's result did not reach the model (%d requests)", len(reqs))
			}
			srv.Close()
			if rep := replayBare(t, store, run); !rep.Finished || len(rep.Waiting) != 0 {
				t.Fatalf("replay of the approved run: %+v", rep)
			}
		})
	}
}

// lockedBuffer is a process's stderr, read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker stopped (SIGSTOP) in the middle of a model call loses the run
// to a peer, which expires its lease with fencing and finishes the run;
// continued (SIGCONT), the first worker is fenced and stops the run
// without writing to it. The run replays in a bare environment, whole,
// on both stores.
func TestReplay_FencedFleetRunReplaysInABareEnvironment(t *testing.T) {
	for _, backend := range replayStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}},
				modeltest.Reply{Content: "never sent", Delay: 10 * time.Minute}, // the stopped worker waits for it
				modeltest.Reply{Content: "read it after the fence"})
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := userEnv(t, "", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-fleet-0123456789", "OPENAI_DEFAULT_MODEL=m-fleet")
			sub := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "submit", "--workspace", ws, "--tools", "read_workspace_file", "read a.txt")...)
			if sub.code != 0 {
				t.Fatalf("submit: exit %d\n%s", sub.code, sub.stderr)
			}
			run := strings.TrimSpace(sub.stdout)
			worker := func() (*execpkg.Cmd, *lockedBuffer) {
				var stderr lockedBuffer
				w := execpkg.Command(stockRath(t), append(append([]string(nil), store...), "worker", "--lease", "2s", "--backends", "local")...)
				w.Env, w.Stderr = env, &stderr
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Process.Signal(syscall.SIGCONT); w.Process.Kill(); w.Wait() })
				return w, &stderr
			}
			first, firstLog := worker()
			for deadline := time.Now().Add(2 * time.Minute); len(srv.Requests()) < 2; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the first worker made %d model calls, want 2", len(srv.Requests()))
				}
			}
			first.Process.Signal(syscall.SIGSTOP)
			worker()
			r := rathEnv(t, env, append(append([]string(nil), store...), "wait", "--timeout", "2m", run)...)
			if r.code != 0 || !strings.Contains(r.stdout, run+"\tdone") {
				t.Fatalf("wait after the takeover: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			first.Process.Signal(syscall.SIGCONT)
			for deadline := time.Now().Add(time.Minute); !strings.Contains(firstLog.String(), "run "+run+": lost"); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the continued worker did not say it lost the run:\n%s", firstLog.String())
				}
			}
			srv.Close()
			if rep := replayBare(t, store, run); !rep.Finished {
				t.Fatalf("the fenced run replays as unfinished: %+v", rep)
			}
		})
	}
}
