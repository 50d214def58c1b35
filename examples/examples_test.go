package examples_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath/flow/model/scripted"

	"github.com/gorath/rath/internal/rathbin"
)

// exampleCase is one example program and what its output must show.
type exampleCase struct {
	dir string // the example's directory, like "01_hello_agent"
	// want are regular expressions, each of which must match the output.
	want []string
	// replays is how many replay verdicts the example prints; each must
	// say that every recorded event was reproduced.
	replays int
	// check, if set, checks more of the output.
	check func(t *testing.T, out string)
}

// cases are the examples that run anywhere, offline.
var cases = []exampleCase{
	{dir: "01_hello_agent", replays: 1, want: []string{
		`(?m)^answer: +Event sourcing stores every change`,
		`session s-[0-9a-f]{20} now holds 2 chunks`,
	}},
	{dir: "02_session_lineage", replays: 1, want: []string{
		`stale handle refused: handle at version 1, session at version \d+`,
		`(?m)^  question -> rainy \(fork\)$`,
		`(?m)^  rainy -> merged \(merge\)$`,
		`(?m)^  shared +s-[0-9a-f]{20} +detach`,
		`"parent_session_ids":\[\],"lineage_kind":"detach"`,
	}},
	{dir: "04_tools_builtin", replays: 2, want: []string{
		`(?m)^  total: 68$`,
		`path escapes the workspace`,
		`write_workspace_file on local, numbers.txt created`,
		`(?m)^replay with live tools: `,
	}},
	{dir: "05_custom_tool", replays: 1, want: []string{
		`"required":\["id"\]`,
		`order A-1001: shipped`,
		`\[schema_violation\]`,
		`\[tool_error\] .*no order A-1002`,
	}},
	{dir: "07_streaming", replays: 1, want: []string{
		`\[call count_words \{"text":·`,
		`\d+ deltas streamed; the session holds 2 assistant chunks`,
	}},
	{dir: "08_compress", replays: 1, want: []string{
		`long session s-[0-9a-f]{20}: 6 chunks`,
		`compressed into s-[0-9a-f]{20} \(lineage compress, parent s-[0-9a-f]{20}\): 2 chunks`,
		`(?m)^  summary: +Release 0\.4`,
	}},
	{dir: "09_memory", replays: 2, want: []string{
		`(?m)^  memory: +Ann prefers metric units\.$`,
		`recall at seq \d+ for "I'm Ann.*": 0 hits`,
		`recall at seq \d+ for "Answer briefly.*": 2 hits`,
	}},
	{dir: "10_provider_variation", replays: 2, want: []string{
		`POST /v1/chat/completions Authorization: Bearer <key>; messages \[system user assistant tool\]`,
		`POST /v1/messages x-api-key: <key>, anthropic-version: 2023-06-01; system prompt apart: true; messages \[user\(text\) assistant\(tool_use\) user\(tool_result\)\]`,
		`same transcript both ways: true`,
		`anthropic replay \(no server\): `,
	}},
	{dir: "11_dynamic_selector", replays: 1, want: []string{
		`decision 1: research`,
		`decision 2: write`,
		`decision 3: none`,
		`(?m)^root\.write:$`,
	}},
	{dir: "12_replay", replays: 2, check: tamperedSeqIsNamed, want: []string{
		`2\. replay: (\d+) of (\d+) events reproduced \(100%\)`,
		`3\. replay with a changed prompt: \d+ of \d+ events reproduced; first divergence:`,
		`mismatch at seq \d+ \(provider\.called\)`,
		`hint: prompt changed: agent root\.edit`,
		`\+ system: You edit product copy for a playful tone\.`,
		`4\. fork at seq \d+: new run \(parent the original run\), final blurb: Three moods`,
		`original: verify ok`,
	}},
	{dir: "14_human_in_the_loop", replays: 1, want: []string{
		`run waiting; root\.release asks to run: deploy \{"env":"production","version":"1\.2\.0","skip_checks":true\}`,
		`apr-[0-9a-f]{16} rejected by ops-lead: never skip the checks`,
		`edited arguments: \{"env":"production","version":"1\.2\.1"\}`,
		`refused answer: true`,
		`answered by pm: \{"channel":"#releases"\}`,
		`deploy: error \(rejected\): a person \(ops-lead\) rejected this call: never skip the checks`,
		`deploy: production ok: 1\.2\.1 deployed`,
		`step: announce on #releases`,
		`run ok: run-`,
	}},
	{dir: "13_parallel_fanout", replays: 1, want: []string{
		`(?m)^root\.reviewers\.security: +Security:`,
		`(?m)^root\.reviewers\.tests: +Tests:`,
		`(?m)^root\.lead: +Request changes`,
		`merged into s-[0-9a-f]{20} \(merge\), 3 parents`,
	}},
}

// tamperedSeqIsNamed checks that the verification of the tampered copy
// names the very seq the example edited.
func tamperedSeqIsNamed(t *testing.T, out string) {
	edited := regexp.MustCompile(`edited the payload of seq (\d+)`).FindStringSubmatch(out)
	failed := regexp.MustCompile(`tampered: verify FAILED at seq (\d+)`).FindStringSubmatch(out)
	if edited == nil || failed == nil || edited[1] != failed[1] {
		t.Errorf("the tampered seq and the seq verify names differ: %q, %q", edited, failed)
	}
}

// needsTag lists the examples whose cases are in the integration test
// file, with what they need.
var needsTag = map[string]string{
	"03_sandbox_backend": "bubblewrap",
	"06_mcp_tool":        "node and the npm MCP server fixture",
}

// exampleTimeout bounds one example's run.
const exampleTimeout = 60 * time.Second

func TestExamples(t *testing.T) {
	for _, dir := range slices.Sorted(maps.Keys(needsTag)) {
		t.Logf("%s needs %s: TestExamples_Integration runs it (-tags integration)", dir, needsTag[dir])
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			t.Parallel()
			runExample(t, c, nil)
		})
	}
}

// Every example directory has a test case, a hand-written cassette and a
// header comment saying how to run it.
func TestExamples_Ladder(t *testing.T) {
	dirs, err := filepath.Glob("[0-9][0-9]_*")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.dir] = true
	}
	for dir := range needsTag {
		covered[dir] = true
	}
	for _, dir := range dirs {
		if !covered[dir] {
			t.Errorf("%s has no test case", dir)
		}
		src, err := os.ReadFile(filepath.Join(dir, "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(src), "// Command "+dir+" ") || !strings.Contains(string(src), "go run ./examples/"+dir) {
			t.Errorf("%s/main.go: the header must start with %q and say %q", dir, "// Command "+dir, "go run ./examples/"+dir)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "cassette.json"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := scripted.Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
		} else if !strings.Contains(c.Description(), "not a real model") {
			t.Errorf("%s/cassette.json: the description must say the turns are scripted, not a real model: %q", dir, c.Description())
		}
	}
	if len(dirs) != len(cases)+len(needsTag) {
		t.Errorf("%d example directories, %d cases", len(dirs), len(cases)+len(needsTag))
	}
}

// verdict is a replay verdict line: "... N of M events reproduced (100%)".
var verdict = regexp.MustCompile(`(\d+) of (\d+) events reproduced \(100%\)`)

// runExample runs an example and checks its output.
func runExample(t *testing.T, c exampleCase, env []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	out := run(t, c.dir, env, "-dir", dir)
	for _, w := range c.want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("output does not match %q", w)
		}
	}
	verdicts := verdict.FindAllStringSubmatch(out, -1)
	for _, v := range verdicts {
		if v[1] != v[2] || v[1] == "0" {
			t.Errorf("replay verdict %q: not every event reproduced", v[0])
		}
	}
	if len(verdicts) != c.replays {
		t.Errorf("%d replay verdicts, want %d", len(verdicts), c.replays)
	}
	if c.check != nil {
		c.check(t, out)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	replayExampleRuns(t, c.dir, dir)
}

// run runs the built example in a fresh working directory (examples embed
// their cassettes, so they must not depend on it) and returns its output.
// A non-zero exit fails the test.
func run(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	bin := binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), exampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, dir), args...)
	cmd.Dir = t.TempDir()
	// No user config file: the examples must not depend on one. Their
	// temporary runtimes go under TMPDIR, which the test removes even when
	// an example fails before its own cleanup.
	cmd.Env = append(os.Environ(), append([]string{"RATH_HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}, env...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var build struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// binaries builds every example once, and the stock rath binary with
// them, in one go build (linking a dozen programs in one command is much
// faster than a go run each), and returns the directory holding them.
// They are removed by TestMain.
func binaries(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		dirs, err := filepath.Glob("[0-9][0-9]_*")
		if err != nil {
			build.err = err
			return
		}
		if build.dir, build.err = os.MkdirTemp("", "rath-examples-"); build.err != nil {
			return
		}
		args := []string{"build", "-ldflags=-s -w", "-o", build.dir + string(filepath.Separator)}
		for _, d := range dirs {
			args = append(args, "./"+d)
		}
		if os.Getenv(rathbin.Env) == "" {
			args = append(args, "../cmd/rath") // else stockRath uses that one
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			build.err = err
			return
		}
		build.out, build.err = exec.Command(goBin, args...).CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("build the examples: %v\n%s", build.err, build.out)
	}
	return build.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopPostgres()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}
