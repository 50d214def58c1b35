//go:build integration

package cli

import (
	"net"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// everythingDir is the npm fixture of the MCP reference server, installed
// by `make deps` (npm ci).
const everythingDir = "../../../flow/mcptool/testdata"

// everythingEntry returns the reference server's entry point; a missing
// install fails the test rather than skipping it.
func everythingEntry(t *testing.T) string {
	t.Helper()
	entry, err := filepath.Abs(filepath.Join(everythingDir, "server-everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the MCP reference server is not installed (%v); run: make deps", err)
	}
	return entry
}

// startEverythingHTTP runs the reference server in mode (streamableHttp or
// sse) on a free loopback port and returns the port; the server is
// stopped by the returned func (and at the end of the test).
func startEverythingHTTP(t *testing.T, mode string) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	loopback, _ := filepath.Abs(filepath.Join(everythingDir, "loopback.cjs"))
	cmd := execpkg.Command("node", "--require", loopback, everythingEntry(t), mode)
	cmd.Env = append(os.Environ(), "PORT="+port)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Cleanup(stop)
	// Generous: node starts in seconds, but the replay matrix starts
	// several reference servers at once on a loaded machine (one took
	// over 20 s at a load average of 32).
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference server did not listen on %s:\n%s", port, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return port, stop
}

// TestMCP_EverythingStdio runs an agent on the reference server started
// over stdio by --mcp, then replays the run without it.
func TestMCP_EverythingStdio(t *testing.T) {
	withMCPConfig(t, map[string]any{})
	dir := t.TempDir()
	cas := writeCassette(t, "echoed and summed", `e1:ev__echo:{"message":"hello over stdio"}`, `e2:ev__get-sum:{"a":2,"b":40}`)
	got, end := toolReturns(t, dir, "--cassette", cas, "--mcp", "ev=node "+everythingEntry(t)+" stdio", "--tools", "ev.echo,ev.get-sum", "go")
	for _, id := range []string{"e1", "e2"} {
		if got[id].ErrorKind != "" || got[id].SandboxID != "mcp:ev" {
			t.Errorf("%s: %+v", id, got[id])
		}
	}
	out := mustRun(t, dir, "show", end.Output)
	for _, want := range []string{"Echo: hello over stdio", "The sum of 2 and 40 is 42"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if out := mustRun(t, dir, "replay", end.Run); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
}

// TestMCP_EverythingHTTP runs an agent on the reference server over
// streamable HTTP (from the config file, with a token header) and over
// SSE (from --mcp), stops the server, and replays the runs from the log.
func TestMCP_EverythingHTTP(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	t.Setenv("RATH_TEST_MCP_TOKEN", token)
	for _, tt := range []struct{ mode, flag string }{{"streamableHttp", ""}, {"sse", "sse+http://127.0.0.1:%s/sse"}} {
		t.Run(tt.mode, func(t *testing.T) {
			port, stop := startEverythingHTTP(t, tt.mode)
			args := []string{}
			if tt.flag == "" {
				withMCPConfig(t, map[string]any{"ev": map[string]any{"url": "http://127.0.0.1:" + port + "/mcp",
					"headers": map[string]string{"Authorization": "Bearer ${RATH_TEST_MCP_TOKEN}"}}})
			} else {
				withMCPConfig(t, map[string]any{})
				args = append(args, "--mcp", "ev="+strings.Replace(tt.flag, "%s", port, 1))
			}
			dir := t.TempDir()
			cas := writeCassette(t, "done", `e1:ev__echo:{"message":"the token is `+token+`"}`, `e2:ev__get-sum:{"a":1,"b":2}`)
			got, end := toolReturns(t, dir, append(args, "--cassette", cas, "--tools", "ev.*", "go")...)
			if got["e1"].ErrorKind != "" || got["e2"].ErrorKind != "" {
				t.Fatalf("calls failed: %+v %+v", got["e1"], got["e2"])
			}
			out := mustRun(t, dir, "show", end.Output)
			if !strings.Contains(out, "The sum of 1 and 2 is 3") {
				t.Errorf("show:\n%s", out)
			}
			if tt.flag == "" && strings.Contains(mustRun(t, dir, "events", "--json"), token) {
				t.Errorf("the header's token reached the log")
			}
			stop()
			if out := mustRun(t, dir, "replay", end.Run); !strings.Contains(out, "reproduced: ") {
				t.Fatalf("replay with the server stopped: %s", out)
			}
		})
	}
}
