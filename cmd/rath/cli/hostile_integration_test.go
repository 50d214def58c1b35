//go:build integration

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The link attack on a live-tools replay, with the run on bwrap: inside
// the sandbox the link names the sandbox's view, but the copy and the
// restore happen on the host, where it would name the host directory.
func TestReplayLiveTools_LinksNeverFollowed_Bwrap(t *testing.T) {
	dir, ws, host := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(host, "f"), "canary\n")
	writeFile(t, filepath.Join(host, "victim"), "keep\n")
	writeFile(t, filepath.Join(ws, "x", "f"), "orig\n")
	cas := shellCassette(t,
		"echo new > x/f; echo v > x/victim",
		fmt.Sprintf("rm -rf x && ln -s %s x", host))
	out := mustRun(t, dir, "run", "--cassette", cas, "--workspace", ws, "--backend", "bwrap", "--tools", "run_shell_command", "go")
	m := regexp.MustCompile(`(?m)^run: (run-\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in:\n%s", out)
	}
	r := rathWithin(t, 2*time.Minute, dir, "replay", "--live-tools", m[1])
	if r.code != 0 || !strings.Contains(r.stdout, "reproduced: ") {
		t.Errorf("replay --live-tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContent(t, filepath.Join(host, "f"), "canary\n")
	wantContent(t, filepath.Join(host, "victim"), "keep\n")
	if _, err := os.Lstat(filepath.Join(ws, "x")); err != nil {
		t.Error(err)
	}
}
