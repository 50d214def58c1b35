package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
)

// killBound is how long a call that must be cut short may take at most. It
// is a correctness bound, not a performance figure: the commands it guards
// would otherwise run for ten minutes.
const killBound = 60 * time.Second

func (s *suite) testIdentity(t *testing.T) {
	sb := s.open(t)
	if sb.ID() == "" {
		t.Error("ID is empty")
	}
	wd := sb.Workdir()
	if !path.IsAbs(wd) {
		t.Fatalf("Workdir %q is not absolute", wd)
	}
	if got := s.sh(t, sb, "pwd -P"); got != wd+"\n" {
		t.Errorf("pwd = %q, want %q", got, wd+"\n")
	}
	if got := s.sh(t, sb, `echo "$HOME"`); got != wd+"\n" {
		t.Errorf("HOME = %q, want %q", got, wd+"\n")
	}
	other := s.open(t)
	if other.ID() == sb.ID() {
		t.Errorf("two sandboxes share the ID %q", sb.ID())
	}
}

func (s *suite) testExec(t *testing.T) {
	sb := s.open(t)
	tests := []struct {
		name           string
		command        string
		stdout, stderr string
		exit           int
	}{
		{"echo", "echo hello", "hello\n", "", 0},
		{"lines", `printf 'a\nb\n\nc\n'`, "a\nb\n\nc\n", "", 0},
		{"stderr and exit", "echo out; echo oops >&2; exit 3", "out\n", "oops\n", 3},
		{"silent", "true", "", "", 0},
		{"false", "false", "", "", 1},
		{"not found", "rath-no-such-command-xyz 2>/dev/null", "", "", 127},
		{"pipeline", "printf 'b\\na\\n' | sort", "a\nb\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.exec(t, sb, sandbox.ExecRequest{Command: tt.command})
			if got, want := res.ExitCode, tt.exit; got != want {
				t.Errorf("exit = %d, want %d", got, want)
			}
			if got, want := string(res.Stdout), tt.stdout; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			if got, want := string(res.Stderr), tt.stderr; got != want {
				t.Errorf("stderr = %q, want %q", got, want)
			}
			if res.StdoutTruncated || res.StderrTruncated || res.TimedOut {
				t.Errorf("flags: %+v", res)
			}
			if got, want := res.StdoutBytes, int64(len(tt.stdout)); got != want {
				t.Errorf("StdoutBytes = %d, want %d", got, want)
			}
			if res.Duration <= 0 {
				t.Errorf("Duration = %s", res.Duration)
			}
		})
	}
	t.Run("empty command", func(t *testing.T) {
		if _, err := sb.Exec(t.Context(), sandbox.ExecRequest{}); err == nil {
			t.Error("empty command: no error")
		}
	})
	t.Run("files shared with file operations", func(t *testing.T) {
		s.write(t, sb, "from-tool.txt", "written by WriteFile\n")
		if got := s.sh(t, sb, "cat from-tool.txt"); got != "written by WriteFile\n" {
			t.Errorf("cat = %q", got)
		}
		s.sh(t, sb, "echo written by a command > from-cmd.txt")
		data, err := sb.ReadFile(t.Context(), "from-cmd.txt")
		if err != nil || string(data) != "written by a command\n" {
			t.Errorf("ReadFile = %q, %v", data, err)
		}
	})
}

func (s *suite) testExecDir(t *testing.T) {
	sb := s.open(t)
	s.write(t, sb, "sub/inner/x.txt", "x")
	if got := s.sh(t, sb, "ls"); got != "sub\n" {
		t.Errorf("ls in workspace = %q", got)
	}
	for _, dir := range []string{"sub", "sub/", "./sub", sb.Workdir() + "/sub"} {
		res := s.exec(t, sb, sandbox.ExecRequest{Command: "ls; pwd -P", Dir: dir})
		if got, want := string(res.Stdout), "inner\n"+sb.Workdir()+"/sub\n"; got != want {
			t.Errorf("Dir %q: stdout %q, want %q", dir, got, want)
		}
	}
	cases := []struct {
		dir  string
		want error
	}{
		{"missing", sandbox.ErrNotFound},
		{"sub/inner/x.txt", sandbox.ErrNotDir},
		{"..", sandbox.ErrPathEscape},
		{"sub/../../..", sandbox.ErrPathEscape},
		{"/", sandbox.ErrPathEscape},
	}
	for _, c := range cases {
		_, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "true", Dir: c.dir})
		wantErr(t, "exec in "+c.dir, err, c.want, c.dir)
	}
}

func (s *suite) testEnv(t *testing.T) {
	sb := s.open(t)
	res := s.exec(t, sb, sandbox.ExecRequest{
		Command: `printf '%s|%s' "$RATH_A" "$RATH_B"`,
		Env:     map[string]string{"RATH_A": "one", "RATH_B": "two words"},
	})
	if got := string(res.Stdout); !strings.HasPrefix(got, "one|two words") {
		t.Errorf("env vars = %q", got)
	}
	// Secrets in the host environment must not reach commands.
	const secret = "sk-sandboxtest-0123456789"
	for _, name := range []string{"RATH_SANDBOXTEST_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(name, secret)
	}
	env := s.sh(t, sb, "env")
	if strings.Contains(env, secret) {
		t.Errorf("a host secret reached the command environment:\n%s", env)
	}
	if !strings.Contains(env, "PATH=") {
		t.Errorf("no PATH in the command environment:\n%s", env)
	}
}

func (s *suite) testStdin(t *testing.T) {
	sb := s.open(t)
	if !s.caps.Stdin {
		_, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "cat", Stdin: []byte("x")})
		wantErr(t, "stdin without the capability", err, sandbox.ErrUnsupported, "")
		return
	}
	res := s.exec(t, sb, sandbox.ExecRequest{Command: "cat", Stdin: []byte("from stdin\n")})
	if got := string(res.Stdout); got != "from stdin\n" {
		t.Errorf("cat = %q", got)
	}
	// More than a pipe buffer, to a command that reads it all.
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	res = s.exec(t, sb, sandbox.ExecRequest{Command: "wc -c", Stdin: []byte(big)})
	if got := strings.TrimSpace(string(res.Stdout)); got != fmt.Sprint(len(big)) {
		t.Errorf("wc -c = %q, want %d", got, len(big))
	}
	// A command that ignores a large stdin must still finish.
	res = s.exec(t, sb, sandbox.ExecRequest{Command: "echo ignored", Stdin: []byte(big)})
	if got := string(res.Stdout); got != "ignored\n" {
		t.Errorf("ignoring stdin: stdout %q", got)
	}
	// Without Stdin, a reader sees end of input at once.
	res = s.exec(t, sb, sandbox.ExecRequest{Command: "cat; echo done"})
	if got := string(res.Stdout); got != "done\n" {
		t.Errorf("no stdin: stdout %q", got)
	}
}

func (s *suite) testTimeout(t *testing.T) {
	sb := s.open(t)
	const timeout = 500 * time.Millisecond
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "echo started; sleep 600", Timeout: timeout})
	wantErr(t, "sleep past the timeout", err, sandbox.ErrTimeout, "")
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("TimedOut = %v, ExitCode = %d; want true, -1", res.TimedOut, res.ExitCode)
	}
	if res.Duration < timeout || res.Duration > killBound {
		t.Errorf("Duration = %s; want between %s and %s", res.Duration, timeout, killBound)
	}
	if got := string(res.Stdout); got != "started\n" {
		t.Errorf("partial stdout = %q, want %q", got, "started\n")
	}
	// The sandbox is still usable.
	if got := s.sh(t, sb, "echo after"); got != "after\n" {
		t.Errorf("after timeout: %q", got)
	}
}

// assertStill checks that nothing appends to file any more: every process
// that could have written it is dead.
func (s *suite) assertStill(t *testing.T, sb sandbox.Sandbox, file string) {
	t.Helper()
	first, err := sb.Stat(t.Context(), file)
	if err != nil {
		t.Fatalf("the command never wrote %s: %v", file, err)
	}
	time.Sleep(time.Second)
	second, err := sb.Stat(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	if second.Size != first.Size {
		t.Errorf("%s grew from %d to %d bytes after the call returned: processes survived the kill", file, first.Size, second.Size)
	}
}

func (s *suite) testRunaway(t *testing.T) {
	sb := s.open(t)
	// A background loop that outlives its shell unless the whole process
	// tree is killed.
	cmd := `(while :; do echo tick >> ticks; sleep 0.05; done) & sleep 600`
	_, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: cmd, Timeout: 700 * time.Millisecond})
	wantErr(t, "runaway", err, sandbox.ErrTimeout, "")
	s.assertStill(t, sb, "ticks")
}

// AssertBackgroundJobsEnd checks a property the host backends add to the
// contract: a background job left behind by a command that exits normally
// ends with the call. Remote backends (a container that outlives the call)
// need not have it, so it is not part of [Run].
func AssertBackgroundJobsEnd(t *testing.T, sb sandbox.Sandbox) {
	t.Helper()
	s := &suite{}
	cmd := `(while :; do echo tick >> bg; sleep 0.05; done) > /dev/null 2>&1 & sleep 0.3; echo parent done`
	if got := s.sh(t, sb, cmd); got != "parent done\n" {
		t.Errorf("stdout = %q", got)
	}
	s.assertStill(t, sb, "bg")
}

func (s *suite) testForkTree(t *testing.T) {
	sb := s.open(t)
	// A fork bomb with a depth limit: 2^8-1 = 255 processes that each keep
	// appending to a file. A real (unbounded) fork bomb would exhaust the
	// shared machine's pid space before the timeout; the kill path is the
	// same.
	cmd := `bomb() { if [ "$1" -lt 7 ]; then bomb $(($1+1)) & bomb $(($1+1)) & fi; while :; do echo . >> forks; sleep 0.2; done; }; bomb 0`
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: cmd, Timeout: 1500 * time.Millisecond})
	wantErr(t, "fork tree", err, sandbox.ErrTimeout, "")
	if !res.TimedOut {
		t.Errorf("TimedOut = false")
	}
	s.assertStill(t, sb, "forks")
}

func (s *suite) testCancel(t *testing.T) {
	sb := s.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "sleep 600", Timeout: 10 * time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled exec: err = %v, want context.Canceled", err)
	}
	if res.TimedOut {
		t.Error("a cancelled call reports TimedOut")
	}
	if res.Duration > killBound {
		t.Errorf("Duration = %s: the command was not killed on cancel", res.Duration)
	}
	// An already-cancelled context runs nothing.
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Command: "touch should-not-exist"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("exec on a done context: err = %v", err)
	}
	if _, err := sb.Stat(t.Context(), "should-not-exist"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("a command ran on a done context (stat: %v)", err)
	}
}

func (s *suite) testOutputCap(t *testing.T) {
	sb := s.open(t)
	const n = 200000
	res := s.exec(t, sb, sandbox.ExecRequest{
		Command:   fmt.Sprintf("head -c %d /dev/zero | tr '\\0' o; head -c %d /dev/zero | tr '\\0' e >&2", n, n),
		MaxStdout: 1000,
		MaxStderr: 10,
	})
	if got, want := string(res.Stdout), strings.Repeat("o", 1000); got != want {
		t.Errorf("kept stdout: %d bytes, want 1000 x 'o'", len(got))
	}
	if got, want := string(res.Stderr), strings.Repeat("e", 10); got != want {
		t.Errorf("kept stderr = %q, want %q", got, want)
	}
	if !res.StdoutTruncated || !res.StderrTruncated {
		t.Errorf("truncation not marked: %+v", res)
	}
	// A line-framed backend may count one newline it added.
	if res.StdoutBytes < n || res.StdoutBytes > n+1 || res.StderrBytes < n || res.StderrBytes > n+1 {
		t.Errorf("counted %d / %d bytes, want %d", res.StdoutBytes, res.StderrBytes, n)
	}
	if s.caps.ExactOutput && (res.StdoutBytes != n || res.StderrBytes != n) {
		t.Errorf("exact output: counted %d / %d bytes, want %d", res.StdoutBytes, res.StderrBytes, n)
	}

	// The default cap applies when the request sets none.
	res = s.exec(t, sb, sandbox.ExecRequest{Command: fmt.Sprintf("head -c %d /dev/zero | tr '\\0' o", n)})
	if len(res.Stdout) == 0 || len(res.Stdout) >= n || !res.StdoutTruncated {
		t.Errorf("default cap: kept %d of %d bytes, truncated %v", len(res.Stdout), n, res.StdoutTruncated)
	}

	// Exactly at the cap is not truncated.
	res = s.exec(t, sb, sandbox.ExecRequest{Command: "echo 123456789", MaxStdout: 10})
	if string(res.Stdout) != "123456789\n" || res.StdoutTruncated {
		t.Errorf("at the cap: %q truncated=%v", res.Stdout, res.StdoutTruncated)
	}
}

func (s *suite) testBigOutput(t *testing.T) {
	sb := s.open(t)
	size := s.opts.BigOutput
	// Lines of 64 KiB, so line-framed backends get few, large frames.
	cmd := fmt.Sprintf(`yes "$(head -c 65535 /dev/zero | tr '\0' a)" | head -c %d`, size)
	before := heapNow()
	h := startHeapSampler()
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: cmd, Timeout: 5 * time.Minute})
	peak := h.Peak()
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if res.StdoutBytes < size || !res.StdoutTruncated || len(res.Stdout) > sandbox.DefaultMaxOutput {
		t.Errorf("counted %d bytes (want >= %d), kept %d, truncated %v", res.StdoutBytes, size, len(res.Stdout), res.StdoutTruncated)
	}
	// Holding the output would need at least size bytes of heap; the
	// bound leaves room for transport buffers and other goroutines.
	limit := uint64(min(size/4, 32<<20))
	if peak > before && peak-before > limit {
		t.Errorf("heap grew by %d MiB while %d MiB of output streamed (limit %d MiB)", (peak-before)>>20, size>>20, limit>>20)
	}
	t.Logf("%d MiB of output: live heap %d KiB before, peak %d KiB", size>>20, before>>10, peak>>10)
}
