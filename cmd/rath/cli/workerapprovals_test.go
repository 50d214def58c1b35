package cli

import (
	"encoding/json"
	"io"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

// A worker's operator imposes approval rules (its config file's) on the
// runs it executes, which the submitter's own rules cannot loosen: a run
// whose submitter exempted the shell ("policy": "never") still waits
// for a person before its command runs, the command runs once after the
// approval (its effect, a line appended outside the workspace, is
// counted), and the run replays in a bare environment, asking the same,
// on both stores.
func TestWorker_ImposesItsApprovalRules(t *testing.T) {
	for _, backend := range replayStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			effect := filepath.Join(t.TempDir(), "effect.log")
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{appendLine(t, effect, "ran")}},
				modeltest.Reply{Content: "ran it once approved"})
			// The submitter's config exempts the shell from asking.
			run := submitShell(t, store, userEnv(t, `{"approvals":[{"tool":"run_shell_command","policy":"never"}]}`))
			operator := userEnv(t, `{"approvals":[{"tool":"run_shell_command","deadline":"1h","default":"rejected"}]}`,
				"OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-operator-0123456789", "OPENAI_DEFAULT_MODEL=m-fleet")
			rath := func(argv ...string) result {
				return rathEnv(t, operator, append(append([]string(nil), store...), argv...)...)
			}
			var stderr lockedBuffer
			startLocalWorker(t, store, operator, &stderr)
			var pend []pendingView
			for deadline := time.Now().Add(2 * time.Minute); len(pend) == 0; time.Sleep(100 * time.Millisecond) {
				pend = decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout)
				if time.Now().After(deadline) {
					t.Fatalf("the worker's run never asked for the approval; worker:\n%s", stderr.String())
				}
			}
			if len(pend) != 1 || pend[0].Tool != "run_shell_command" || pend[0].Deadline == nil {
				t.Fatalf("pending %+v: want one request for the shell, with the operator's deadline", pend)
			}
			if !strings.Contains(stderr.String(), "1 approval rules imposed") {
				t.Fatalf("the worker did not say it imposes its rules:\n%s", stderr.String())
			}
			if _, err := os.Stat(effect); !os.IsNotExist(err) {
				t.Fatalf("the command ran before anyone approved it (%v)", err)
			}
			if rep := replayBare(t, store, run); rep.Finished || len(rep.Waiting) != 1 || rep.Waiting[0] != pend[0].ID {
				t.Fatalf("replay of the run waiting on the worker: %+v", rep)
			}
			approveLast(t, rath, pend[0].ID, run, effect, "ran\n")
			srv.Close()
			if rep := replayBare(t, store, run); !rep.Finished || len(rep.Waiting) != 0 {
				t.Fatalf("replay of the approved run: %+v", rep)
			}
		})
	}
}

// A run keeps the approval rules it started under: a worker without
// rules that goes on with a run a strict worker started (here once a
// person decided its first call) asks for the run's second call as the
// first worker would have, instead of running it unasked; the run
// replays in a bare environment, on both stores.
func TestWorker_ARunKeepsTheRulesItStartedUnder(t *testing.T) {
	for _, backend := range replayStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			effect := filepath.Join(t.TempDir(), "effect.log")
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{appendLine(t, effect, "one")}},
				modeltest.Reply{ToolCalls: []events.ToolCall{appendLine(t, effect, "two")}},
				modeltest.Reply{Content: "both ran"})
			run := submitShell(t, store, bareEnv(t))
			provider := []string{"OPENAI_BASE_URL=" + srv.URL(), "OPENAI_API_KEY=sk-operator-0123456789", "OPENAI_DEFAULT_MODEL=m-fleet"}
			strict := userEnv(t, `{"approvals":[{"tool":"run_shell_command"}]}`, provider...)
			lax := userEnv(t, "", provider...)
			rath := func(argv ...string) result {
				return rathEnv(t, lax, append(append([]string(nil), store...), argv...)...)
			}
			pendingOther := func(than string) pendingView {
				t.Helper()
				for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
					if pend := decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout); len(pend) == 1 && pend[0].ID != than {
						return pend[0]
					}
					if time.Now().After(deadline) {
						t.Fatal("the run never asked for the approval")
					}
				}
			}
			first := startLocalWorker(t, store, strict, nil)
			p1 := pendingOther("")
			first.Process.Signal(syscall.SIGTERM)
			first.Wait()
			if r := rath("approve", p1.ID, "--as", "operator"); r.code != 0 {
				t.Fatalf("approve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			startLocalWorker(t, store, lax, nil)
			p2 := pendingOther(p1.ID)
			if b, _ := os.ReadFile(effect); string(b) != "one\n" {
				t.Fatalf("before the second approval the commands appended %q, want the first line only", b)
			}
			approveLast(t, rath, p2.ID, run, effect, "one\ntwo\n")
			srv.Close()
			if rep := replayBare(t, store, run); !rep.Finished || len(rep.Waiting) != 0 {
				t.Fatalf("replay of the run: %+v", rep)
			}
		})
	}
}

// appendLine is a run_shell_command call that appends word to effect, a
// file outside the workspace: what ran, and how often, is counted there.
func appendLine(t *testing.T, effect, word string) events.ToolCall {
	t.Helper()
	b, err := json.Marshal(map[string]string{"cmd": "echo " + word + " >> " + effect})
	if err != nil {
		t.Fatal(err)
	}
	return call("run_shell_command", string(b))
}

// submitShell submits, as a user with env, a run of the shell tool on a
// fresh local workspace, and returns its id.
func submitShell(t *testing.T, store, env []string) string {
	t.Helper()
	sub := rathEnv(t, env, append(append([]string(nil), store...), "submit", "--workspace", t.TempDir(), "--backend", "local",
		"--tools", "run_shell_command", "append lines")...)
	if sub.code != 0 {
		t.Fatalf("submit: exit %d\n%s", sub.code, sub.stderr)
	}
	return strings.TrimSpace(sub.stdout)
}

// startLocalWorker starts the stock rath as a worker on store that allows
// the local backend, with exactly env; it is killed at cleanup.
func startLocalWorker(t *testing.T, store, env []string, stderr io.Writer) *execpkg.Cmd {
	t.Helper()
	w := execpkg.Command(stockRath(t), append(append([]string(nil), store...), "worker", "--lease", "2s", "--backends", "local")...)
	w.Env, w.Stderr = env, stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	return w
}

// approveLast approves request id, the last one run waits for, waits for
// the run to finish, and checks that its commands appended want to
// effect (each line once).
func approveLast(t *testing.T, rath func(...string) result, id, run, effect, want string) {
	t.Helper()
	if r := rath("approve", id, "--as", "operator"); r.code != 0 {
		t.Fatalf("approve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := rath("wait", "--timeout", "2m", run); r.code != 0 || !strings.Contains(r.stdout, run+"\tdone") {
		t.Fatalf("wait after the approval: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(effect); err != nil || string(b) != want {
		t.Fatalf("the commands' effect: %q %v, want %q", b, err, want)
	}
}
