package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	execpkg "os/exec"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

// serveWith starts `rath serve` (the stock binary) on store with exactly
// env and extra flags, and returns its base URL and the page's CSRF value.
func serveWith(t *testing.T, env, store []string, extra ...string) (base, csrf string, stop func()) {
	t.Helper()
	cmd := execpkg.Command(stockRath(t), append(append(append([]string(nil), store...), "serve", "--addr", "127.0.0.1:0"), extra...)...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(stop)
	base = servedURL(t, bufio.NewReader(stderr))
	res, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page strings.Builder
	if _, err := bufio.NewReader(res.Body).WriteTo(&page); err != nil {
		t.Fatal(err)
	}
	c := regexp.MustCompile(`name="rath-csrf" content="([0-9a-f]+)"`).FindStringSubmatch(page.String())
	if c == nil {
		t.Fatalf("the page lacks its CSRF value:\n%s", page.String())
	}
	return base, c[1], stop
}

// consoleRun is what GET /api/runs/{id} says of a run's state.
type consoleRun struct {
	Status  string `json:"status"`
	Actions *struct {
		Resume bool `json:"resume"`
		Fork   bool `json:"fork"`
	} `json:"actions"`
}

func getRun(t *testing.T, base, run string) consoleRun {
	t.Helper()
	res, err := http.Get(base + "api/runs/" + run)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v consoleRun
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// untilRunStatus polls the console until run's status is one of want.
func untilRunStatus(t *testing.T, base, run string, want ...string) consoleRun {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		v := getRun(t, base, run)
		for _, w := range want {
			if v.Status == w {
				return v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %q, want one of %v", run, v.Status, want)
		}
	}
}

// The console resumes and forks a run of the built-in agent with the
// library's own resolution (no resolver from the CLI), live: the resume
// and the fork call the model where the record ends, and both finish.
// A resume goes on live, so a console without --allow-live refuses it
// (403), as it refuses a fork, and neither offers it; the run is left as
// it was. Both stores.
func TestServe_ResumeAndForkOfAnAgentRunGoOnLive(t *testing.T) {
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}})
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644)
			env := userEnv(t, "", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-k-0123456789")
			rath := func(argv ...string) result {
				return rathEnv(t, env, append(append([]string(nil), store...), argv...)...)
			}
			r := rath("run", "--model", "m", "--workspace", ws, "--tools", "read_workspace_file", "--approve", "read_workspace_file", "read a file")
			if r.code != ExitWaiting {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			run, id := runIDOf(t, r), requestID.FindString(r.stderr)
			if d := rath("approve", id, "--as", "ann"); d.code != 0 {
				t.Fatalf("approve: exit %d\n%s", d.code, d.stderr)
			}
			before := rath("events", "--json", "--run", run).stdout

			base, csrf, stop := serveWith(t, env, store)
			if v := getRun(t, base, run); v.Actions == nil || v.Actions.Resume || v.Actions.Fork {
				t.Errorf("a console without --allow-live offers live actions: %+v", v.Actions)
			}
			if code, body := post(t, base, csrf, "api/runs/"+run+"/resume", ""); code != http.StatusForbidden || !strings.Contains(body, "--allow-live") {
				t.Errorf("resume on a console without --allow-live: %d %s", code, body)
			}
			if after := rath("events", "--json", "--run", run).stdout; after != before {
				t.Fatalf("a refused resume wrote to the run:\n%s", after)
			}
			stop()

			srv.Push(modeltest.Reply{Content: "read alpha"})
			base, csrf, _ = serveWith(t, env, store, "--allow-live", "--backends", "local")
			if v := getRun(t, base, run); v.Actions == nil || !v.Actions.Resume {
				t.Errorf("an --allow-live console does not offer the resume: %+v", v.Actions)
			}
			if code, body := post(t, base, csrf, "api/runs/"+run+"/resume", ""); code != http.StatusAccepted {
				t.Fatalf("resume: %d %s", code, body)
			}
			if v := untilRunStatus(t, base, run, "done", "failed"); v.Status != "done" {
				t.Fatalf("the resumed run ended %q: it did not go on live\n%s", v.Status, rath("events", "--run", run).stdout)
			}
			if reqs := srv.Requests(); !strings.Contains(string(reqs[len(reqs)-1].Body), "alpha") {
				t.Fatalf("the resume did not send the tool's result to the model")
			}
			if rep := replayBare(t, store, run); !rep.Finished {
				t.Fatalf("replay of the resumed run: %+v", rep)
			}

			// A fork after a run's tool result goes on live from there: one
			// more model call, answered by the server.
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}}, modeltest.Reply{Content: "read alpha again"})
			if r := rath("run", "--model", "m", "--workspace", ws, "--tools", "read_workspace_file", "read it again"); r.code != 0 {
				t.Fatalf("second run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			} else {
				run = runIDOf(t, r)
			}
			returned := regexp.MustCompile(`"seq":(\d+),[^\n]*"type":"tool.returned"`).FindStringSubmatch(rath("events", "--json", "--run", run).stdout)
			if returned == nil {
				t.Fatal("no tool.returned event")
			}
			srv.Push(modeltest.Reply{Content: "forked answer"})
			code, body := post(t, base, csrf, "api/runs/"+run+"/fork", fmt.Sprintf(`{"seq": %s}`, returned[1]))
			if code != http.StatusAccepted {
				t.Fatalf("fork: %d %s", code, body)
			}
			var started struct{ Run string }
			if err := json.Unmarshal([]byte(body), &started); err != nil {
				t.Fatal(err)
			}
			if v := untilRunStatus(t, base, started.Run, "done", "failed"); v.Status != "done" {
				t.Fatalf("the fork ended %q: it did not go on live\n%s", v.Status, rath("events", "--run", started.Run).stdout)
			}
			if out := rath("events", "--json", "--run", started.Run).stdout; !strings.Contains(out, "forked answer") {
				t.Fatalf("the fork's answer is not the model's:\n%s", out)
			}
		})
	}
}
