package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/flow/model/modeltest"
)

// A retry notice is a diagnostic: it goes to stderr, and stdout holds only
// the transcript and the ids.
func TestRun_RetryNoticeOnStderr(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Status: 429, RetryAfter: "0", Message: "slow down"}, modeltest.Reply{Content: "hello after a retry"})
	t.Setenv("RATH_HOME", t.TempDir())
	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789")
	t.Setenv("OPENAI_BASE_URL", srv.URL())
	t.Setenv("OPENAI_DEFAULT_MODEL", "m1")
	r := rathCLI(t, t.TempDir(), "run", "--no-stream", "say hello")
	if r.code != ExitOK || !strings.Contains(r.stdout, "hello after a retry") {
		t.Fatalf("run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "model call failed") || !strings.Contains(r.stderr, "model call failed") {
		t.Fatalf("retry notice: want it on stderr only\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}

// Redirected, rebuild draws no progress bar: no carriage returns or block
// glyphs reach a log file.
func TestRebuild_NoProgressBarWhenNotATerminal(t *testing.T) {
	w := seed(t)
	r := rathCLI(t, w.dir, "rebuild")
	if r.code != ExitOK {
		t.Fatalf("rebuild: exit %d %s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stderr, "\r█▏▎▍▌▋▊▉░▒▓") || strings.Contains(r.stderr, "rebuild") {
		t.Fatalf("rebuild drew a progress bar into a buffer: %q", r.stderr)
	}
}

// Bad flag values and a missing provider are usage errors that name the
// flag or the variables, and record nothing: no session, no run.
func TestRun_BadInputRecordsNothing(t *testing.T) {
	t.Setenv("RATH_HOME", t.TempDir())
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	for _, tc := range []struct {
		name string
		argv []string
		want []string
	}{
		{"unknown backend", []string{"--backend", "bogus", "--workspace", "w", "--cassette", "c.json"}, []string{`--backend "bogus"`, "local"}},
		{"no provider", nil, []string{"--provider", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rathCLI(t, dir, append(append([]string{"run"}, tc.argv...), "go")...)
			if r.code != ExitUsage || strings.Contains(r.stderr, "Provider.Kind") {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, ExitUsage, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("stderr %q does not name %q", r.stderr, w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "rath.db")); err == nil {
				if out := mustRun(t, dir, "sessions", "--json"); strings.Contains(out, `"id"`) {
					t.Fatalf("a session was left behind: %s", out)
				}
			}
		})
	}
}

// A malformed base URL fails at once, before any call or retry.
func TestRun_MalformedBaseURLFailsAtOnce(t *testing.T) {
	t.Setenv("RATH_HOME", t.TempDir())
	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789")
	t.Setenv("OPENAI_BASE_URL", "localhost:8080/v1") // no scheme
	dir := t.TempDir()
	start := time.Now()
	r := rathCLI(t, dir, "run", "--model", "m", "go")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "base URL") || strings.Contains(r.stderr, "model call failed") {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v: retried", d)
	}
}
