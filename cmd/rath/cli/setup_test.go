package cli

import (
	"context"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/session"
)

// childEnv makes the test binary record a run of the tally workflow in the
// named directory and kill itself with SIGKILL at its third tool call.
const childEnv = "RATH_CLI_TEST_CRASH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		Main(Config{}) // the test binary as the rath command
	}
	if dir := os.Getenv(childEnv); dir != "" {
		crashingChild(dir)
		return
	}
	if mode := os.Getenv(mcpServerEnv); mode != "" {
		os.Exit(serveMCP(mode))
	}
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(multiprocessChild(role))
	}
	if spec := os.Getenv(newChildEnv); spec != "" {
		os.Exit(newChild(spec))
	}
	// One PostgreSQL server for the binary's --dsn tests.
	pgtest.Main(m, func(s *pgtest.Server) { pgServer = s }, stock.Remove)
}

// tallyModel answers from the request alone, so a resumed run gets the
// same answers as an uninterrupted one: it calls "tally" until the
// conversation holds three tool results, then answers.
type tallyModel struct{}

func (tallyModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == events.RoleToolResult {
			n++
		}
	}
	if n == 3 {
		return model.Response{Content: "tallied 3", Usage: events.Usage{TotalTokens: 5}}, nil
	}
	return model.Response{ToolCalls: []events.ToolCall{{ID: fmt.Sprint("t", n), Name: "tally", Arguments: fmt.Sprintf(`{"n":%d}`, n)}},
		Usage: events.Usage{TotalTokens: 6}}, nil
}

type tallyArgs struct {
	N int `json:"n"`
}

// tallyAgent is a user's workflow: its tool appends a line to effects.log
// in dir (a side effect that must happen once per call over a crash and a
// resume); with crashAt >= 0 the process is killed as that call starts.
func tallyAgent(dir string, crashAt int) flow.Workflow {
	tally, err := flow.NewTool("tally", "Tally, with a side effect.", func(_ context.Context, _ *session.Session, a tallyArgs) (string, error) {
		if a.N == crashAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		f, err := os.OpenFile(filepath.Join(dir, "effects.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "tally-%d\n", a.N)
		return fmt.Sprint("n=", a.N), err
	})
	if err != nil {
		panic(err)
	}
	p, err := flow.ResolveProvider(flow.Provider{Client: tallyModel{}, Model: "tally"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		panic(err)
	}
	a, err := flow.NewAgent("You tally.", p, flow.WithTools(tally))
	if err != nil {
		panic(err)
	}
	return a
}

func recordTally(ctx context.Context, dir string, crashAt int) (*rath.Run, error) {
	rt, err := rath.Open(ctx, filepath.Join(dir, "store"))
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	input, err := rt.NewUserSession(ctx, "tally to three")
	if err != nil {
		return nil, err
	}
	return rt.Start(ctx, "tally", tallyAgent(dir, crashAt), input, rath.WithRunID(fmt.Sprint("run-tally-", crashAt)))
}

func crashingChild(dir string) {
	_, err := recordTally(context.Background(), dir, 2)
	fmt.Fprintln(os.Stderr, "child finished without crashing:", err)
	os.Exit(4)
}

func TestConfigSetup_ReplaysAndResumesARegisteredWorkflow(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if _, err := recordTally(t.Context(), dir, -1); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "effects.log"))

	// The stock binary replays the run from the workflow spec it
	// recorded, without the tool's code (answered from the log); it
	// cannot resume it (a resume runs the tool), and says how to fix that.
	r := rathCLI(t, store, "replay", "run-tally--1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "reproduced: ") {
		t.Fatalf("replay without the workflow registered: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rathCLI(t, store, "resume", "run-tally--1"); r.code != ExitNotRebuilt || !strings.Contains(r.stderr, "cli.Config.Setup") {
		t.Fatalf("resume without the workflow registered: exit %d\n%s", r.code, r.stderr)
	}

	// A binary built with cli.Main and a Setup that registers it does.
	registered := 0
	cfg := Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
		registered++
		rt.Register("tally", tallyAgent(dir, -1))
		return nil
	}}
	mine := func(argv ...string) result {
		var out, errb strings.Builder
		code := Run(t.Context(), cfg, append([]string{"--dir", store}, argv...), strings.NewReader(""), &out, &errb)
		return result{stdout: out.String(), stderr: errb.String(), code: code}
	}
	if r := mine("replay", "run-tally--1"); r.code != ExitOK || !strings.Contains(r.stdout, "reproduced: ") || !strings.Contains(r.stdout, "workflow tally") {
		t.Fatalf("replay with the workflow registered: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "effects.log")); !os.IsNotExist(err) {
		t.Fatalf("a replay ran the tool for real (effects.log: %v)", err)
	}

	// A run killed mid-way is resumed by name: each side effect once.
	cmd := execpkg.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
	r = mine("resume", "run-tally-2", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if sum := decodeJSON[runEnd](t, lines[len(lines)-1]); r.code != ExitOK || !sum.Summary || sum.Status != "done" || !strings.HasPrefix(sum.Output, "s-") ||
		!strings.Contains(r.stdout, `"type":"tool.returned"`) {
		t.Fatalf("resume --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "effects.log"))
	if got := strings.Fields(string(b)); fmt.Sprint(got) != "[tally-0 tally-1 tally-2]" {
		t.Fatalf("side effects over the crash and the resume = %v", got)
	}
	// The log says which call was in flight and ran again.
	if r := mine("events", "--stream", "resume:run-tally-2", "--json"); r.code != ExitOK || !strings.Contains(r.stdout, `"type":"run.resumed"`) ||
		!strings.Contains(r.stdout, `"tool":"tally"`) || !strings.Contains(r.stdout, `"call_id":"t2"`) {
		t.Fatalf("run.resumed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := mine("replay", "run-tally-2"); r.code != ExitOK {
		t.Fatalf("replay of the resumed run: exit %d\n%s", r.code, r.stdout)
	}
	if registered != 4 {
		t.Fatalf("Setup ran %d times, want once per invocation (4)", registered)
	}

	// A failing Setup stops the command with its error.
	bad := Config{Setup: func(context.Context, *rath.Runtime) error { return fmt.Errorf("no config for tally") }}
	var out, errb strings.Builder
	if code := Run(t.Context(), bad, []string{"--dir", store, "runs"}, strings.NewReader(""), &out, &errb); code != ExitFailure || !strings.Contains(errb.String(), "setup: no config for tally") {
		t.Fatalf("failing setup: exit %d %s", code, errb.String())
	}
}
