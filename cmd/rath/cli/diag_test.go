package cli

import (
	"strings"
	"testing"

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
