package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// fencedBlocks returns the fenced blocks of the markdown file at path
// (relative to the repository's root) whose info string is info.
func fencedBlocks(t *testing.T, path, info string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), path))
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
		if strings.HasPrefix(k, "RATH_") || strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_BASE_URL") ||
			strings.HasPrefix(k, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// freshClone copies exactly the files git tracks in this checkout (as
// they are in the working tree, so the test sees uncommitted edits) into
// a new directory and commits them there: what a user has after a git
// clone, without the ignored files (bin/, node_modules, stores) this
// checkout may hold.
func freshClone(t *testing.T) string {
	t.Helper()
	root, clone := repoRoot(t), filepath.Join(t.TempDir(), "rath")
	out, err := execpkg.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src, dst := filepath.Join(root, name), filepath.Join(clone, name)
		info, err := os.Lstat(src)
		if err != nil {
			continue // deleted in the working tree, not yet committed
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		body, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, body, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git(t, clone, "init", "-q")
	git(t, clone, "add", "-A")
	git(t, clone, "-c", "user.name=clone", "-c", "user.email=clone@example.com", "commit", "-q", "-m", "clone")
	return clone
}

// git runs git in dir and returns its stdout.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := execpkg.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// pasteInShell runs blocks as one bash script, each line as a user pastes
// it, in dir, and fails the test with the output if any command fails.
func pasteInShell(t *testing.T, dir string, env []string, blocks []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := execpkg.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+strings.Join(blocks, "\n"))
	cmd.Dir = dir
	cmd.Env = env
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
		t.Fatalf("the pasted blocks failed: %v\n%s", err, out)
	}
	return string(out)
}

// checkClean fails unless git in clone sees no change and ignores only
// what the set-up and the demo are documented to write: the binary, the
// demo's store and workspace, and the MCP server make deps installs.
func checkClean(t *testing.T, clone string) {
	t.Helper()
	if st := git(t, clone, "status", "--porcelain"); st != "" {
		t.Errorf("the clone is dirty after the tour:\n%s", st)
	}
	allowed := []string{"bin/", ".rath-demo/", ".rath-demo-work/", mcpModules + "/"}
	for _, line := range strings.Split(strings.TrimSpace(git(t, clone, "status", "--porcelain", "--ignored")), "\n") {
		if name, ok := strings.CutPrefix(line, "!! "); ok && !slices.Contains(allowed, name) {
			t.Errorf("the tour wrote %s into the clone (ignored, but not the tour's to write)", name)
		}
	}
}

// mcpModules is where make deps installs the reference MCP server.
const mcpModules = "flow/mcptool/testdata/server-everything/node_modules"

// The README's shell blocks run as a user pastes them: from the root of a
// fresh clone, in one shell, starting with the set-up block (make build
// and PATH), offline, with no key; then docs/TOUR.md's blocks in a new
// shell after the same set-up. Both leave the clone as git cloned it.
func TestReadme_TourInAFreshClone(t *testing.T) {
	t.Parallel()
	readme := fencedBlocks(t, "README.md", "sh")
	if len(readme) < 4 || !strings.Contains(readme[0], "make build") {
		t.Fatalf("the README has %d sh blocks; want the set-up (make build) first, then the tour", len(readme))
	}
	tour := fencedBlocks(t, "docs/TOUR.md", "sh")
	if len(tour) < 4 {
		t.Fatalf("docs/TOUR.md has %d sh blocks, want the tour's", len(tour))
	}
	clone := freshClone(t)
	env := append(cleanEnv(), "GOPROXY=off", "GOFLAGS=", "RATH_HOME="+t.TempDir(), "TMPDIR="+t.TempDir())

	out := pasteInShell(t, clone, env, readme)
	for _, want := range []string{"replay           reproduced ", "run: run-", "#0 user", "reproduced: ", "ok, head "} {
		if !strings.Contains(out, want) {
			t.Errorf("the README's output lacks %q:\n%s", want, out)
		}
	}
	checkClean(t, clone)

	// The tour's prerequisite for its MCP block, make deps, as this
	// checkout's make deps left it (the test runs offline).
	if err := os.CopyFS(filepath.Join(clone, mcpModules), os.DirFS(filepath.Join(repoRoot(t), mcpModules))); err != nil {
		t.Fatalf("the reference MCP server (run make deps): %v", err)
	}
	out = pasteInShell(t, clone, env, append(readme[:1:1], tour...))
	for _, want := range []string{"\twaiting", "approved by me", "\tdone", ": finished: done", "← ev__echo ok",
		"tool_called:write_workspace_file mean 1.000 over 1 items", "1 runs: 1 same, 0 diverged", "verify it without rath", "attested: "} {
		if !strings.Contains(out, want) {
			t.Errorf("docs/TOUR.md's output lacks %q:\n%s", want, out)
		}
	}
	checkClean(t, clone)
}

// The README's library quickstart compiles and runs offline as printed,
// in a module of its own that requires rath (replaced by this checkout).
func TestReadme_LibraryQuickstart(t *testing.T) {
	t.Parallel()
	var src string
	for _, b := range fencedBlocks(t, "README.md", "go") {
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
