//go:build integration

package opensandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox/opensandbox/opensandboxtest"
)

// The official OpenSandbox TypeScript SDK (testdata/sdk, installed by
// make deps) against the in-repo test server: create a sandbox, run a
// command with streamed output, write, read and list files, delete. Where
// the two disagree, the SDK is right.
func TestOfficialSDK(t *testing.T) {
	if _, err := os.Stat("testdata/sdk/node_modules/@alibaba-group/opensandbox"); err != nil {
		t.Fatalf("the OpenSandbox SDK is not installed (run make deps): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v (run make deps)", err)
	}
	root := t.TempDir()
	srv := opensandboxtest.NewServer(opensandboxtest.Options{Root: root, APIKey: "sdk-key"})
	defer srv.Close()
	script, _ := filepath.Abs("testdata/sdk/sdk_calls.mjs")
	// A stream the SDK waits on for ever (the server lingering after
	// the terminal event) ends here, not at the test binary's timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "OPENSANDBOX_DOMAIN="+srv.Domain, "OPENSANDBOX_API_KEY=sdk-key", "OPENSANDBOX_ROOT="+root)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	t.Logf("sdk:\n%s", out.String())
	if err != nil {
		t.Fatalf("the SDK's calls failed: %v\n%s", err, errb.String())
	}
	for _, want := range []string{"ok create", "ok run", "ok write", "ok read", "ok list", "ok delete"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q", want)
		}
	}
}
