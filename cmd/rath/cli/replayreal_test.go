package cli

import (
	"encoding/json"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/replay"

	"github.com/gorath/rath/internal/rathbin"
)

// These tests take the path a user takes: `rath run` in its own process
// against an HTTP server speaking a vendor's wire format, chosen by the
// environment, the config file or flags; then `rath replay` and
// `rath dossier --replay` in a fresh process with nothing but PATH, an
// empty HOME and an empty RATH_HOME, the servers stopped.

// stock is the stock rath command (cmd/rath), built once per test binary
// without the race detector and removed by TestMain. The matrix starts
// hundreds of processes: the race-instrumented test binary takes about
// 1.6 s to start on a loaded 2-core machine, the plain binary 0.15 s,
// which is what lets the matrix run on both stores in make test. The
// race detector still covers the same code in this package's in-process
// tests.
// stock is the stock rath binary, built once for the package's tests.
var stock rathbin.Shared

// stockRath returns the path of the stock rath binary.
func stockRath(t *testing.T) string {
	t.Helper()
	return stock.Path(t)
}

// rathEnv runs the stock rath binary with exactly env: nothing of the
// test's own environment leaks in.
func rathEnv(t *testing.T, env []string, argv ...string) result {
	t.Helper()
	cmd := execpkg.Command(stockRath(t), argv...)
	cmd.Env = env
	return runResult(t, cmd)
}

// bareEnv is `env -i PATH=… HOME=<empty>` with an empty RATH_HOME: no
// key, no config file, no provider.
func bareEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + t.TempDir()}
}

// userEnv is a user's shell: PATH, HOME, a RATH_HOME holding config (if
// any) and the variables given.
func userEnv(t *testing.T, config string, vars ...string) []string {
	home := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + home}, vars...)
}

var runLine = regexp.MustCompile(`run: (run-[0-9a-f]+)`)

// runIDOf finds the run id `rath run` printed.
func runIDOf(t *testing.T, r result) string {
	t.Helper()
	m := runLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no run id in the output: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return m[1]
}

// replayBare replays run from store in a bare environment, through
// `rath replay --json` and `rath dossier --replay`, and returns the JSON
// report; both must reproduce the record (exit 0).
func replayBare(t *testing.T, store []string, run string) replay.Report {
	t.Helper()
	env := bareEnv(t)
	j := rathEnv(t, env, append(append([]string(nil), store...), "replay", "--json", run)...)
	if j.code != 0 {
		t.Fatalf("replay --json: exit %d\n%s\n%s", j.code, j.stdout, j.stderr)
	}
	rep := decodeJSON[replay.Report](t, j.stdout)
	if rep.Matched != rep.Recorded || rep.Recorded == 0 || rep.Divergence != nil {
		t.Fatalf("replay --json: %+v", rep)
	}
	d := rathEnv(t, env, append(append([]string(nil), store...), "dossier", "--replay", "--format", "md", run)...)
	if d.code != 0 || !strings.Contains(d.stdout, rep.Verdict()) {
		t.Fatalf("dossier --replay: exit %d, want the verdict %q\n%s", d.code, rep.Verdict(), d.stderr)
	}
	return rep
}

// recordedProviderOf reads the provider a run recorded, from its
// run.started, with `rath events` in a bare environment.
func recordedProviderOf(t *testing.T, store []string, run string) flow.Provider {
	t.Helper()
	r := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "events", "--stream", run, "--type", events.TypeRunStarted, "--json")...)
	ev := decodeJSON[events.Event](t, strings.TrimSpace(r.stdout))
	var started events.RunStarted
	if err := json.Unmarshal(ev.Payload, &started); err != nil {
		t.Fatal(err)
	}
	var p flow.Provider
	if err := json.Unmarshal([]byte(started.Params[flow.ProviderParam]), &p); err != nil {
		t.Fatalf("run.started holds no recorded provider: %v\n%s", err, ev.Payload)
	}
	if strings.Contains(string(ev.Payload), "sk-") {
		t.Fatalf("a key reached run.started: %s", ev.Payload)
	}
	return p
}

func call(name, args string) events.ToolCall { return events.ToolCall{Name: name, Arguments: args} }

// realCase is one run against a vendor's HTTP server.
type realCase struct {
	name   string
	vendor string // "openai" or "anthropic"
	// config is the config file, with %[1]s for the server's URL; env
	// the variables, with the same placeholder.
	config string
	env    []string
	args   []string
	tools  bool // a workspace with a.txt and b.txt, and read_workspace_file
	// memory runs a first run in the same store beforehand, committing to
	// the --memory namespace, so that this one recalls something.
	memory bool
	script []modeltest.Reply
	// wantExit is `rath run`'s exit code; wantText what its output holds.
	wantExit int
	wantText string
	// wantCalls is how many requests the server must have seen.
	wantCalls int
}

func realCases() []realCase {
	const key = "sk-real-path-0123456789"
	openaiEnv := []string{"OPENAI_BASE_URL=%[1]s", "OPENAI_API_KEY=" + key}
	anthropicEnv := []string{"ANTHROPIC_BASE_URL=%[1]s", "ANTHROPIC_API_KEY=" + key}
	read2 := modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`), call("read_workspace_file", `{"path":"b.txt"}`)},
		Usage: events.Usage{PromptTokens: 20, CompletionTokens: 8}}
	return []realCase{
		{name: "openai env plain", vendor: "openai", env: openaiEnv, args: []string{"--model", "m-plain", "--no-stream"},
			script: []modeltest.Reply{{Content: "hi there", Usage: events.Usage{PromptTokens: 9, CompletionTokens: 2}}}, wantText: "hi there", wantCalls: 1},
		{name: "openai env streamed", vendor: "openai", env: append(openaiEnv, "OPENAI_DEFAULT_MODEL=m-env"),
			script: []modeltest.Reply{{Content: "streamed hello to you", Usage: events.Usage{PromptTokens: 9, CompletionTokens: 4}}}, wantText: "streamed hello to you", wantCalls: 1},
		{name: "openai 429 then success", vendor: "openai", env: openaiEnv, args: []string{"--model", "m"},
			script: []modeltest.Reply{{Status: 429, Message: "slow down", RetryAfter: "0"}, {Content: "after the wait"}}, wantText: "after the wait", wantCalls: 2},
		{name: "openai 500 then a stream cut midway", vendor: "openai", env: openaiEnv, args: []string{"--model", "m"},
			script:   []modeltest.Reply{{Status: 500}, {Content: "this answer is cut off before its end", CutAfter: 3}, {Content: "whole at last"}},
			wantText: "whole at last", wantCalls: 3},
		{name: "openai 500 as an error event mid-stream", vendor: "openai", env: openaiEnv, args: []string{"--model", "m"},
			script:   []modeltest.Reply{{Content: "this answer breaks off with an error event", ErrorAfter: 3, Message: "upstream failed"}, {Content: "whole after the error"}},
			wantText: "whole after the error", wantCalls: 2},
		{name: "anthropic 500 as an error event mid-stream", vendor: "anthropic", env: anthropicEnv, args: []string{"--model", "claude-x"},
			script:   []modeltest.Reply{{Content: "this answer breaks off with an error event", ErrorAfter: 4, Message: "upstream failed"}, {Content: "whole after the error"}},
			wantText: "whole after the error", wantCalls: 2},
		{name: "openai memory recall and commit", vendor: "openai", env: openaiEnv, args: []string{"--model", "m", "--memory", "user/ana"}, memory: true,
			script: []modeltest.Reply{{Content: "noted for Ana"}}, wantText: "noted for Ana", wantCalls: 1},
		{name: "openai parallel tool calls", vendor: "openai", env: openaiEnv, args: []string{"--model", "m"}, tools: true,
			script: []modeltest.Reply{read2, {Content: "read both"}}, wantText: "read both", wantCalls: 2},
		{name: "openai tool calls no stream usage absent", vendor: "openai", env: openaiEnv, args: []string{"--model", "m", "--no-stream"}, tools: true,
			script: []modeltest.Reply{{ToolCalls: read2.ToolCalls, NoUsage: true}, {Content: "no usage here", NoUsage: true}}, wantText: "no usage here", wantCalls: 2},
		{name: "openai max rounds cap streamed usage absent", vendor: "openai", env: openaiEnv, args: []string{"--model", "m", "--max-rounds", "1"}, tools: true,
			script: []modeltest.Reply{{ToolCalls: read2.ToolCalls, NoUsage: true}}, wantExit: 1, wantCalls: 1},
		{name: "openai named provider from config", vendor: "openai",
			config: `{"providers": {"local": {"kind": "openai", "base_url": "%[1]s", "model": "m-local", "api_key_env": "LOCAL_KEY", "temperature": 0.2, "max_tokens": 300, "retry": {"max_attempts": 2, "initial_backoff": "10ms"}}}}`,
			env:    []string{"LOCAL_KEY=" + key}, args: []string{"--provider", "local"},
			script: []modeltest.Reply{{Status: 503}, {Content: "named and configured"}}, wantText: "named and configured", wantCalls: 2},
		{name: "openai config default", vendor: "openai",
			config: `{"default": "d", "providers": {"d": {"kind": "openai", "base_url": "%[1]s", "model": "m-default", "top_p": 0.5}}}`,
			script: []modeltest.Reply{{Content: "from the default"}}, wantText: "from the default", wantCalls: 1},
		{name: "openai flags over config default", vendor: "openai",
			config: `{"default": "d", "providers": {"d": {"kind": "openai", "base_url": "%[1]s", "model": "m-default"}}}`,
			args:   []string{"--model", "m-flag", "--no-stream", "--system", "Answer in one word."},
			script: []modeltest.Reply{{Content: "flagged"}}, wantText: "flagged", wantCalls: 1},
		{name: "anthropic env streamed tool use", vendor: "anthropic", env: anthropicEnv, args: []string{"--model", "claude-x"}, tools: true,
			script: []modeltest.Reply{{Content: "Reading both.", ToolCalls: read2.ToolCalls, Usage: events.Usage{PromptTokens: 30, CompletionTokens: 12}},
				{Content: "both read", Usage: events.Usage{PromptTokens: 50, CompletionTokens: 3}}}, wantText: "both read", wantCalls: 2},
		{name: "anthropic config", vendor: "anthropic",
			config: `{"providers": {"claude": {"kind": "anthropic", "base_url": "%[1]s", "model": "claude-y", "max_tokens": 512, "api_key_env": "CLAUDE_KEY"}}}`,
			env:    []string{"CLAUDE_KEY=" + key}, args: []string{"--provider", "claude", "--no-stream"},
			script: []modeltest.Reply{{Content: "configured claude"}}, wantText: "configured claude", wantCalls: 1},
	}
}

// newVendorServer starts the fake of vendor.
func newVendorServer(t *testing.T, vendor string) *modeltest.Server {
	if vendor == "anthropic" {
		return modeltest.NewAnthropic(t)
	}
	return modeltest.NewOpenAI(t)
}

// runReal runs tc with `rath run` against a fresh server on store and
// returns the run id, the server stopped.
func runReal(t *testing.T, store []string, tc realCase) string {
	t.Helper()
	srv := newVendorServer(t, tc.vendor)
	srv.Push(tc.script...)
	config := ""
	if tc.config != "" {
		config = fmt.Sprintf(tc.config, srv.URL())
	}
	vars := make([]string, len(tc.env))
	for i, v := range tc.env {
		vars[i] = strings.ReplaceAll(v, "%[1]s", srv.URL())
	}
	argv := append(append(append([]string(nil), store...), "run"), tc.args...)
	if tc.tools {
		ws := t.TempDir()
		for name, text := range map[string]string{"a.txt": "alpha", "b.txt": "beta"} {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		argv = append(argv, "--workspace", ws, "--tools", "read_workspace_file")
	}
	if tc.memory {
		if r := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "memory", "add", "user/ana", "something to know: ana keeps a violet teapot")...); r.code != 0 {
			t.Fatalf("memory add: exit %d\n%s", r.code, r.stderr)
		}
	}
	r := rathEnv(t, userEnv(t, config, vars...), append(argv, "say something")...)
	if tc.memory && !strings.Contains(string(srv.Requests()[0].Body), "violet teapot") {
		t.Fatalf("the recalled memory did not reach the model:\n%s", srv.Requests()[0].Body)
	}
	if r.code != tc.wantExit || !strings.Contains(r.stdout, tc.wantText) {
		t.Fatalf("rath run: exit %d (want %d), want %q in the output\n%s\n%s", r.code, tc.wantExit, tc.wantText, r.stdout, r.stderr)
	}
	if n := len(srv.Requests()); n != tc.wantCalls {
		t.Fatalf("the server got %d requests, want %d", n, tc.wantCalls)
	}
	srv.Close()
	return runIDOf(t, r)
}

// replayStores are the stores the replay matrix runs on: both, in make
// test. Its processes are the stock binary (stockRath), which is what
// makes both stores fit the budget.
func replayStores() []string { return bothStores() }

// bothStores are the two stores.
func bothStores() []string { return []string{"sqlite", "postgres"} }

// storeFor returns the flags of a fresh store of backend: a directory,
// and for postgres a migrated database of the test binary's server.
func storeFor(t *testing.T, backend string) []string {
	t.Helper()
	dir := t.TempDir()
	if backend != "postgres" {
		return []string{"--dir", dir}
	}
	_, dsn := newDatabase(t)
	mustRun(t, dir, "--dsn", dsn, "migrate", "up")
	return []string{"--dir", dir, "--dsn", dsn}
}

func TestReplay_RealProvidersReplayInABareEnvironment(t *testing.T) {
	for _, backend := range replayStores() {
		for _, tc := range realCases() {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				store := storeFor(t, backend)
				run := runReal(t, store, tc)
				if rep := replayBare(t, store, run); !rep.Finished {
					t.Fatalf("a finished run replays as unfinished: %+v", rep)
				}
				if p := recordedProviderOf(t, store, run); p.Vendor != tc.vendor || p.Model == "" || p.BaseURL == "" {
					t.Fatalf("the run recorded provider %+v", p)
				}
			})
		}
	}
}

// A run waiting for a person, then decided but not resumed, replays to
// the end of its record and says it has not finished; once resumed it
// replays whole. Each decision a person can make, and the deadline's.
func TestReplay_UnfinishedRunsReplayToTheEndOfTheirRecord(t *testing.T) {
	tests := []struct {
		name   string
		config string   // approval rules from the config file
		args   []string // --approve
		decide []string // the decision command, with ID for the request
		want   string   // the model's answer after the decision
		sent   string   // what the model is sent after the decision
	}{
		{name: "approved", args: []string{"--approve", "read_workspace_file"}, decide: []string{"approve", "ID", "--as", "ann"}, want: "read alpha", sent: "alpha"},
		{name: "edited", args: []string{"--approve", "read_workspace_file"}, decide: []string{"approve", "ID", "--as", "ann", "--args", `{"path":"b.txt"}`}, want: "read beta", sent: "beta"},
		{name: "rejected", args: []string{"--approve", "read_workspace_file"}, decide: []string{"reject", "ID", "--as", "ann", "--reason", "not that file"}, want: "it was refused", sent: "not that file"},
		{name: "expired", config: `{"approvals": [{"tool": "read_workspace_file", "deadline": "2s", "default": "rejected"}]}`, want: "it was refused", sent: "deadline"},
	}
	for _, backend := range replayStores() {
		for _, tt := range tests {
			t.Run(backend+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				store := storeFor(t, backend)
				srv := modeltest.NewOpenAI(t)
				srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}})
				ws := t.TempDir()
				os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644)
				os.WriteFile(filepath.Join(ws, "b.txt"), []byte("beta"), 0o644)
				env := userEnv(t, tt.config, "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-k-0123456789")
				rath := func(argv ...string) result {
					return rathEnv(t, env, append(append([]string(nil), store...), argv...)...)
				}
				r := rath(append(append([]string{"run", "--model", "m", "--workspace", ws, "--tools", "read_workspace_file"}, tt.args...), "read a file")...)
				if r.code != ExitWaiting {
					t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				run, id := runIDOf(t, r), requestID.FindString(r.stderr)
				waiting := func(when string) {
					t.Helper()
					rep := replayBare(t, store, run)
					if rep.Finished || len(rep.Waiting) != 1 || rep.Waiting[0] != id {
						t.Fatalf("%s: replay of the waiting run: %+v", when, rep)
					}
					out := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "replay", run)...).stdout
					if !strings.Contains(out, "the run has not finished (waiting for "+id+")") {
						t.Fatalf("%s: the verdict does not say the run waits:\n%s", when, out)
					}
				}
				waiting("before the decision")
				if tt.decide == nil {
					// Nobody decides: wait until the deadline has passed.
					for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
						pend := decodeJSON[[]pendingView](t, rath("approvals", "--json").stdout)
						if len(pend) == 1 && pend[0].Expired {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("the request never expired: %+v", pend)
						}
					}
				} else {
					argv := append([]string(nil), tt.decide...)
					argv[1] = id
					if r := rath(argv...); r.code != 0 {
						t.Fatalf("%s: exit %d\n%s\n%s", argv[0], r.code, r.stdout, r.stderr)
					}
				}
				// Decided (or past its deadline) but not resumed: the decision
				// is not part of the record yet.
				waiting("decided, not resumed")
				srv.Push(modeltest.Reply{Content: tt.want})
				if r := rath("resume", "--json", run); r.code != 0 || !strings.Contains(r.stdout, tt.want) {
					t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				// What the tool returned (or the refusal) went to the model.
				reqs := srv.Requests()
				if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, tt.sent) {
					t.Fatalf("the model was not sent %q after the decision:\n%s", tt.sent, last)
				}
				srv.Close()
				if rep := replayBare(t, store, run); !rep.Finished || len(rep.Waiting) != 0 {
					t.Fatalf("replay of the resumed run: %+v", rep)
				}
			})
		}
	}
}

// demoScript is the demo's cassette as an OpenAI-compatible server's
// answers, in order.
func demoScript(t *testing.T) []modeltest.Reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "demo", "cassette.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Responses []struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"tool_calls"`
			Usage events.Usage `json:"usage"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var out []modeltest.Reply
	for _, r := range c.Responses {
		rep := modeltest.Reply{Content: r.Content, Usage: r.Usage}
		for _, tc := range r.ToolCalls {
			args := string(tc.Arguments)
			var s string
			if json.Unmarshal(tc.Arguments, &s) == nil {
				args = s // a string holding the object
			}
			rep.ToolCalls = append(rep.ToolCalls, events.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
		}
		out = append(out, rep)
	}
	return out
}

// The demo (a Selector, forks, memory recall and commit, real tools) with
// --live against an OpenAI-speaking server replays in a bare environment.
func TestReplay_LiveDemoReplaysInABareEnvironment(t *testing.T) {
	for _, backend := range replayStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testLiveDemoReplay(t, backend)
		})
	}
}

func testLiveDemoReplay(t *testing.T, backend string) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(demoScript(t)...)
	store := storeFor(t, backend)
	env := userEnv(t, "", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-demo-0123456789", "OPENAI_DEFAULT_MODEL=m-demo")
	r := rathEnv(t, env, append(append([]string(nil), store...), "demo", "--live", "--json")...)
	if r.code != 0 {
		t.Fatalf("demo --live: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sum := decodeJSON[struct {
		Run       string `json:"run"`
		Scripted  bool   `json:"scripted"`
		Recalled  int    `json:"memories_recalled"`
		Committed int    `json:"memories_committed"`
		Decisions int    `json:"selector_decisions"`
	}](t, r.stdout)
	if sum.Scripted || sum.Committed == 0 || sum.Decisions == 0 || srv.Pending() != 0 {
		t.Fatalf("the live demo did not run on the server: %+v, %d answers left", sum, srv.Pending())
	}
	srv.Close()
	replayBare(t, store, sum.Run)
}

// A run submitted with `rath submit` is executed by `rath worker`, whose
// environment names the provider; a first worker is killed (SIGKILL) in
// the middle of a model call and a second takes the run over once the
// lease lapses. The run replays in a bare environment, whole.
func TestReplay_FleetRunTakenOverReplaysInABareEnvironment(t *testing.T) {
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{call("read_workspace_file", `{"path":"a.txt"}`)}},
				modeltest.Reply{Content: "never sent", Delay: 10 * time.Minute}, // the first worker dies waiting for it
				modeltest.Reply{Content: "read it after the takeover"})
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644)
			env := userEnv(t, "", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-fleet-0123456789", "OPENAI_DEFAULT_MODEL=m-fleet")
			rath := func(argv ...string) result {
				return rathEnv(t, env, append(append([]string(nil), store...), argv...)...)
			}
			// submit resolves nothing: the worker's environment does.
			sub := rathEnv(t, bareEnv(t), append(append([]string(nil), store...), "submit", "--workspace", ws, "--tools", "read_workspace_file", "read a.txt")...)
			if sub.code != 0 {
				t.Fatalf("submit: exit %d\n%s", sub.code, sub.stderr)
			}
			run := strings.TrimSpace(sub.stdout)
			worker := func() *execpkg.Cmd {
				w := execpkg.Command(stockRath(t), append(append([]string(nil), store...), "worker", "--lease", "2s", "--backends", "local")...)
				w.Env = env
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Process.Kill(); w.Wait() })
				return w
			}
			first := worker()
			for deadline := time.Now().Add(2 * time.Minute); len(srv.Requests()) < 2; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the first worker made %d model calls, want 2", len(srv.Requests()))
				}
			}
			first.Process.Signal(syscall.SIGKILL)
			first.Wait()
			// Killed mid-run: the record ends there, and replays so far.
			if rep := replayBare(t, store, run); rep.Finished {
				t.Fatalf("the killed worker's run replays as finished: %+v", rep)
			}
			worker()
			if r := rath("wait", "--timeout", "2m", run); r.code != 0 || !strings.Contains(r.stdout, run+"\tdone") {
				t.Fatalf("wait after the takeover: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			srv.Close()
			if rep := replayBare(t, store, run); !rep.Finished {
				t.Fatalf("the run taken over replays as unfinished: %+v", rep)
			}
			// The worker recorded what it resolved (submit knew nothing).
			if p := recordedProviderOf(t, store, run); p.Vendor != "openai" || p.Model != "m-fleet" || p.BaseURL != srv.URL() {
				t.Fatalf("the worker recorded provider %+v", p)
			}
		})
	}
}

// A run recorded before runs kept their resolved provider (its params
// name no vendor; the environment chose it) still replays in a bare
// environment: the vendor and model come from its first model call.
func TestReplay_RunRecordedBeforeResolvedProviderReplays(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Content: "an old hello"})
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.ResolveProvider(flow.Provider{Vendor: flow.VendorOpenAI, Model: "m-old", BaseURL: srv.URL(), APIKey: "sk-old-0123456789"},
		flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := flow.NewAgent(DefaultSystemPrompt, p, flow.WithMaxRounds(flow.DefaultMaxRounds))
	if err != nil {
		t.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, "say hello")
	if err != nil {
		t.Fatal(err)
	}
	// The parameters `rath run --no-stream` recorded, with OPENAI_* set.
	params := map[string]string{"model": "", "provider": "", "system": DefaultSystemPrompt, "backend": "local",
		"max_rounds": fmt.Sprint(flow.DefaultMaxRounds), "stream": "false"}
	run, err := rt.Start(ctx, runWorkflow, agent, input, rath.WithParams(params))
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	srv.Close()
	replayBare(t, []string{"--dir", dir}, run.ID)
}

// When today's environment would resolve another provider for a run, the
// replay still uses the recorded one, and says so.
func TestReplay_SaysWhenTodaysProviderDiffers(t *testing.T) {
	store := []string{"--dir", t.TempDir()}
	run := runReal(t, store, realCases()[0])
	env := append(bareEnv(t), "OPENAI_BASE_URL=http://127.0.0.1:9/v1", "OPENAI_DEFAULT_MODEL=m-today")
	r := rathEnv(t, env, append(append([]string(nil), store...), "replay", run)...)
	if r.code != 0 || !strings.Contains(r.stdout, "note: the run used provider openai, model m-plain") || !strings.Contains(r.stdout, "http://127.0.0.1:9/v1") {
		t.Fatalf("replay with another provider today: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
