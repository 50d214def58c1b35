package cli

import (
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
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
