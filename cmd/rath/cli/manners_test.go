package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// What a command's exit code and stderr say, run as a process of its own:
// a wait that times out is not a failed run, a run this binary cannot
// rebuild is not a failure either, a bad cassette is bad input, a run
// that waits for a person is said as a status, not as an error, and no
// message carries a Go package's prefix.
func TestManners_ExitCodesAndMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	goRun := recordGoWorkflow(t, store)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	good, bad := filepath.Join(dir, "approve.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(approveCassette), 0o644)
	os.WriteFile(bad, []byte(`{"scripted": true, "responses": [`), 0o644)
	env := []string{"RATH_HOME=" + t.TempDir()}
	rath := func(argv ...string) result {
		return rathExit(t, env, append([]string{"--dir", store}, argv...)...)
	}
	waits := rath("run", "--cassette", good, "--workspace", ws, "--tools", "run_shell_command", "--approve", "run_shell_command", "--no-stream", "write")
	if waits.code != ExitWaiting {
		t.Fatalf("run: exit %d\n%s%s", waits.code, waits.stdout, waits.stderr)
	}
	submitted := strings.TrimSpace(rath("submit", "--cassette", good, "queued").stdout)
	if !strings.HasPrefix(submitted, "run-") {
		t.Fatalf("submit printed %q", submitted)
	}

	for _, tt := range []struct {
		name   string
		argv   []string
		code   int
		says   string
		plain  bool // stderr has no "rath: " line: a status, not an error
		prefix []string
	}{
		{"wait times out", []string{"wait", "--timeout", "300ms", submitted}, ExitTimedOut, "timed out: --timeout 300ms passed", false, nil},
		{"replay of a program's workflow", []string{"replay", goRun}, ExitNotRebuilt, "cannot be replayed or resumed by this binary", false, nil},
		{"resume of a program's workflow", []string{"resume", goRun}, ExitNotRebuilt, "cannot be replayed or resumed by this binary", false, nil},
		{"malformed cassette", []string{"run", "--cassette", bad, "hi"}, ExitUsage, "invalid cassette", false, []string{"flow: ", "scripted: "}},
		{"a run waits", []string{"wait", "--timeout", "1m", waits.runID(t)}, ExitWaiting, "waiting for a person: " + waits.runID(t), true, []string{"flow: "}},
		{"unknown run", []string{"replay", "run-nope"}, ExitFailure, `not found: run "run-nope"`, false, []string{"projections: "}},
		{"unknown session", []string{"show", "s-nope"}, ExitFailure, "not found: s-nope", false, []string{"session: "}},
		{"unknown provider", []string{"run", "--provider", "nope", "hi"}, ExitFailure, "provider configuration: no provider \"nope\"", false, []string{"flow: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rath(tt.argv...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.says) {
				t.Fatalf("rath %s: exit %d, want %d saying %q\n%s%s", strings.Join(tt.argv, " "), r.code, tt.code, tt.says, r.stdout, r.stderr)
			}
			if got := strings.Contains(r.stderr, "rath: "); got == tt.plain {
				t.Errorf("stderr has a \"rath: \" line: %v, want %v\n%s", got, !tt.plain, r.stderr)
			}
			for _, p := range tt.prefix {
				if strings.Contains(r.stderr, p) {
					t.Errorf("stderr carries the package prefix %q:\n%s", p, r.stderr)
				}
			}
		})
	}

	// -q: the request's id alone, for a script (no sed).
	if r := rath("approvals", "-q"); r.code != 0 || !regexp.MustCompile(`^apr-[0-9a-f]{16}\n$`).MatchString(r.stdout) {
		t.Errorf("approvals -q: exit %d, %q", r.code, r.stdout)
	}
}

// goWorkflow is a program's own Go code: no record can describe it.
type goWorkflow struct{}

func (goWorkflow) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	f, err := s.Fork(ctx)
	if err != nil {
		return nil, err
	}
	return f.Append(ctx, events.Chunk{Role: events.RoleAssistant, Content: "done by Go code"})
}

// recordGoWorkflow records a run of goWorkflow in store: this binary can
// neither replay nor resume it (it rebuilds the workflow first).
func recordGoWorkflow(t *testing.T, store string) string {
	t.Helper()
	rt, err := rath.Open(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	in, err := rt.NewUserSession(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(t.Context(), "program", goWorkflow{}, in)
	if err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// runID is the run a `rath run` printed.
func (r result) runID(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no run id in:\n%s", r.stdout)
	}
	return m[1]
}

// `rath runs` lists the newest first, a screenful by default (saying how
// many more there are), every one with --all; -q prints the ids alone.
func TestManners_RunsNewestFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range defaultRunsLimit + 3 {
		a, err := flow.NewAgent("Answer.", flow.Scripted(scripted.Entry{Content: "ok"}))
		if err != nil {
			t.Fatal(err)
		}
		in, err := rt.NewUserSession(t.Context(), fmt.Sprint("question ", i))
		if err != nil {
			t.Fatal(err)
		}
		run, err := rt.Start(t.Context(), "answer", a, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{run.ID}, ids...) // newest first
	}
	rt.Close()
	lines := func(s string) []string { return strings.Fields(s) }
	for _, tt := range []struct {
		name   string
		argv   []string
		want   []string
		stderr string
	}{
		{"default limit", []string{"runs", "-q"}, ids[:defaultRunsLimit], fmt.Sprintf("the newest %d of %d runs; --all lists every one", defaultRunsLimit, len(ids))},
		{"limit", []string{"runs", "--quiet", "--limit", "2"}, ids[:2], "the newest 2 of"},
		{"all", []string{"runs", "-q", "--all"}, ids, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rathExit(t, nil, append([]string{"--dir", dir}, tt.argv...)...)
			if r.code != 0 || strings.Join(lines(r.stdout), " ") != strings.Join(tt.want, " ") {
				t.Fatalf("rath %s: exit %d\n got %q\nwant %q\n%s", strings.Join(tt.argv, " "), r.code, lines(r.stdout), tt.want, r.stderr)
			}
			if (tt.stderr == "") != (r.stderr == "") || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr %q, want %q", r.stderr, tt.stderr)
			}
		})
	}
	r := rathExit(t, nil, "--dir", dir, "runs")
	if first := strings.Fields(strings.Split(r.stdout, "\n")[1])[0]; first != ids[0] {
		t.Errorf("the table's first run is %s, want the newest, %s", first, ids[0])
	}
	if r := rathExit(t, nil, "--dir", dir, "runs", "--all", "--limit", "3"); r.code != ExitUsage {
		t.Errorf("--all with --limit: exit %d", r.code)
	}
}

// A worker stops without its internal counters, unless --verbose.
func TestManners_WorkerCountersOnlyVerbose(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		flags []string
		want  bool
	}{{nil, false}, {[]string{"--verbose"}, true}} {
		t.Run(fmt.Sprint(tt.flags), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := execpkg.Command(os.Args[0], append([]string{"--dir", dir, "worker", "--backends", "local"}, tt.flags...)...)
			cmd.Env = append(os.Environ(), mainEnv+"=1", "RATH_HOME="+t.TempDir())
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var all bytes.Buffer
			sc := bufio.NewScanner(io.TeeReader(stderr, &all))
			for sc.Scan() && !strings.Contains(sc.Text(), "stop with SIGTERM") {
			}
			// Stopped once it is registered, as an operator stops one.
			for {
				var ws []map[string]any
				if r := rathExit(t, nil, "--dir", dir, "workers", "--json"); r.code == 0 && json.Unmarshal([]byte(r.stdout), &ws) == nil && len(ws) == 1 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			io.Copy(io.Discard, io.TeeReader(stderr, &all))
			if err := cmd.Wait(); err != nil {
				t.Fatalf("worker: %v\n%s", err, all.String())
			}
			if got := strings.Contains(all.String(), "event writer:"); got != tt.want {
				t.Errorf("counters printed: %v, want %v\n%s", got, tt.want, all.String())
			}
		})
	}
}

// `rath --help` lists every command in a section, and the main commands
// show real examples.
func TestManners_GroupedHelp(t *testing.T) {
	var out, errb strings.Builder
	if code := Run(context.Background(), Config{}, []string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--help: exit %d\n%s", code, errb.String())
	}
	for _, g := range commandGroups {
		if !strings.Contains(out.String(), "\n"+g.title+"\n") {
			t.Errorf("no section %q in:\n%s", g.title, out.String())
		}
	}
	root := newRootCmd(newApp(Config{}, strings.NewReader(""), io.Discard, io.Discard))
	for _, c := range root.Commands() {
		if c.GroupID == "" {
			t.Errorf("command %s is in no section of the help", c.Name())
		}
	}
	for _, name := range []string{"run", "runs", "replay", "resume", "wait", "submit", "worker", "approvals", "dossier", "verify", "serve"} {
		c, _, err := root.Find([]string{name})
		if err != nil || !strings.HasPrefix(c.Example, "rath "+name) {
			t.Errorf("%s: no example starting with \"rath %s\": %q", name, name, c.Example)
		}
	}
}
