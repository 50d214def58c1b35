package cli

import (
	"context"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the repository's root, from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readmeBlocks returns the README's fenced blocks whose info string is
// info ("sh test": the shell blocks that need no network and no key).
func readmeBlocks(t *testing.T, info string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?ms)^```" + regexp.QuoteMeta(info) + "\n(.*?)^```$")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// cleanEnv is the environment without rath's variables and model keys, so
// the commands see a fresh user's machine.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RATH_") || strings.HasSuffix(k, "_API_KEY") || strings.HasPrefix(k, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// The README's "sh test" blocks run as printed, in order, in one shell,
// on a fresh store, with this test binary as the rath on PATH.
func TestReadme_ShellBlocks(t *testing.T) {
	t.Parallel()
	blocks := readmeBlocks(t, "sh test")
	if len(blocks) < 3 {
		t.Fatalf("the README has %d sh test blocks, want the tour's", len(blocks))
	}
	root, work, bin := repoRoot(t), t.TempDir(), t.TempDir()
	// The blocks use repo-relative paths (examples/…, flow/…), and write
	// where they run: a scratch directory that sees the repo's files.
	for _, d := range []string{"examples", "flow"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "rath")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := execpkg.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+strings.Join(blocks, "\n"))
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), mainEnv+"=1", "PATH="+bin+":"+os.Getenv("PATH"),
		"RATH_DIR="+filepath.Join(t.TempDir(), "store"), "RATH_HOME="+t.TempDir())
	// A block that fails after it started a worker in the background
	// leaves the worker holding the output pipe: the shell's whole group
	// is killed when the test ends, and the wait for the pipe is bounded.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	defer func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's shell blocks failed: %v\n%s", err, out)
	}
	for _, want := range []string{"reproduced: ", "\twaiting", "approved by me", "\tdone", ": finished: done", "← ev__echo ok", "verify it without rath", "attested: "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

// The README's library quickstart compiles and runs offline as printed,
// in a module of its own that requires rath (replaced by this checkout).
func TestReadme_LibraryQuickstart(t *testing.T) {
	t.Parallel()
	var src string
	for _, b := range readmeBlocks(t, "go") {
		if strings.HasPrefix(b, "package main") {
			src = b
			break
		}
	}
	if src == "" {
		t.Fatal("the README has no Go block with a package clause")
	}
	root, mod := repoRoot(t), t.TempDir()
	gomod := "module example.com/quickstart\n\ngo 1.26.0\n\nrequire github.com/gorath/rath v0.0.0\n\n" +
		"replace github.com/gorath/rath => " + root + "\n\n" +
		// rath's own replace directives apply to its main module only.
		"replace github.com/google/pprof => github.com/google/pprof v0.0.0-20250317173921-a4b03ec1a45e\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(mod, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	// The test's own flags (make test runs this package without -race)
	// and tags: the packages come from the build cache this test
	// binary's build filled, instead of a race build of all of rath
	// made here while the race suite builds the same beside it.
	cmd := execpkg.CommandContext(ctx, "go", "run", "-tags", "integration", ".")
	cmd.Dir = mod
	cmd.Env = append(cleanEnv(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of the quickstart: %v\n%s", err, out)
	}
	for _, want := range []string{"#0 user\n  What is event sourcing?", "#1 assistant by root", "reproduced 6 of 6 events"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the quickstart's output lacks %q:\n%s", want, out)
		}
	}
}
