package retention_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath/retention"

	"github.com/gorath/rath/internal/rathbin"
)

// built is the rath binary, built once for the package's tests.
var built rathbin.Shared

func rathBin(t *testing.T) string {
	t.Helper()
	return built.Path(t)
}

type result struct {
	code           int
	stdout, stderr string
}

func rath(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(rathBin(t), append([]string{"--dir", dir}, argv...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return runCmd(t, cmd)
}

// runCmd runs a rath process to its end and returns its exit code and
// output.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// The path an operator takes, each command its own process: redact one
// event of a recorded run, verify lists it, replay says what it could not
// check (exit 6), bad requests fail with a clear error and change
// nothing, and retain archives the run into a directory that verifies
// alone.
func TestCLI_RedactVerifyReplayRetain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if r := rath(t, dir, "demo"); r.code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var runs []struct {
		ID string `json:"id"`
	}
	r := rath(t, dir, "runs", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v\n%s", err, r.stdout)
	}
	run := runs[0].ID
	// The seq of the run's first tool result.
	r = rath(t, dir, "events", "--run", run)
	m := regexp.MustCompile(`(?m)^\s*(\d+)\s.*tool\.returned`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no tool.returned in the run's events:\n%s", r.stdout)
	}
	seq := m[1]

	for _, bad := range []struct {
		argv []string
		code int
		want string
	}{
		{[]string{"redact", "--event", "999999", "--reason", "x"}, 1, "cannot redact seq 999999: no such event"},
		{[]string{"redact", "--event", seq}, 2, "--reason is required"},
		{[]string{"redact", "--event", seq, "--session", "s", "--reason", "x"}, 2, "exactly one of --event"},
		{[]string{"redact", "--event", "1", "--reason", "two\nlines"}, 1, "control characters"},
	} {
		if r := rath(t, dir, bad.argv...); r.code != bad.code || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", bad.argv, r.code, r.stderr, bad.code, bad.want)
		}
	}
	if r := rath(t, dir, "verify"); r.code != 0 || strings.Contains(r.stdout, "redacted ") {
		t.Fatalf("verify after the refused redactions: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = rath(t, dir, "redact", "--event", seq, "--reason", "erasure request 9", "--as", "alice")
	if r.code != 0 || !strings.Contains(r.stdout, "redacted 1 event ") {
		t.Fatalf("redact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = rath(t, dir, "verify")
	if want := "seq " + seq + ": redacted at seq "; r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "by alice: erasure request 9") {
		t.Fatalf("verify: exit %d, want it to list %q by alice\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	r = rath(t, dir, "replay", run)
	if r.code != 6 || !strings.Contains(r.stdout, "reproduced except redacted") || !strings.Contains(r.stdout, "(seq "+seq+")") {
		t.Fatalf("replay: exit %d, want 6 naming seq %s\n%s%s", r.code, seq, r.stdout, r.stderr)
	}

	archive := filepath.Join(t.TempDir(), "archive")
	r = rath(t, dir, "retain", "--completed-before", "0d", "--archive-to", archive, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would retain "+run) {
		t.Fatalf("retain --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(archive); !os.IsNotExist(err) {
		t.Fatalf("the dry run wrote the archive: %v", err)
	}
	if r := rath(t, dir, "retain", "--completed-before", "soon"); r.code != 2 {
		t.Fatalf("retain --completed-before soon: exit %d, want 2\n%s", r.code, r.stderr)
	}
	r = rath(t, dir, "retain", "--completed-before", "0d", "--archive-to", archive)
	if r.code != 0 || !strings.Contains(r.stdout, "retained "+run) {
		t.Fatalf("retain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = rath(t, dir, "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "by rath retain: retention") {
		t.Fatalf("verify after retain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	v, err := retention.VerifyArchive(filepath.Join(archive, run))
	if err != nil || v.Redacted != 1 || v.Events < 10 {
		t.Fatalf("the archive: %+v, %v; want it to verify with the one event redacted before", v, err)
	}
	// A whole run redacted, its start too: verify still passes, and a
	// replay names the redaction instead of "not found".
	if r := rath(t, dir, "redact", "--run", run, "--reason", "erasure of the run"); r.code != 0 {
		t.Fatalf("redact --run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rath(t, dir, "verify"); r.code != 0 || !strings.Contains(r.stdout, "erasure of the run") {
		t.Fatalf("verify after redact --run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rath(t, dir, "replay", run); r.code != 1 || !strings.Contains(r.stderr, "its events were redacted") {
		t.Fatalf("replay of a redacted run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
