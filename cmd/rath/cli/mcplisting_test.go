package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	execpkg "os/exec"
	"strings"
	"testing"
	"time"
)

// stallMCP is a stdio MCP server that holds its answers: it answers
// initialize (unless mute) and then never tools/list; other requests get
// "method not found". It reads until its stdin closes.
func stallMCP(mute bool) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil || mute {
			continue // a notification, or a server that answers nothing
		}
		switch req.Method {
		case "initialize":
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "stall", "version": "1.0.0"}}})
		case "tools/list":
			// held open: never answered
		default:
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
	return 0
}

// rathProcWithin runs the test binary as rath in its own process and fails
// the test if it has not exited within limit: what hangs is killed.
func rathProcWithin(t *testing.T, limit time.Duration, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := execpkg.CommandContext(ctx, os.Args[0], argv...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.WaitDelay = time.Second
	r := runResult(t, cmd)
	if ctx.Err() != nil {
		t.Fatalf("rath %s still running after %s (killed)\nstderr: %s", strings.Join(argv, " "), limit, r.stderr)
	}
	return r
}

// A server that answers initialize and holds tools/list open, or answers
// nothing at all, cannot hang `rath tools` or `rath run`: each gives up
// after the server's bound (list_timeout, else call_timeout) with an
// error naming the server, and exits non-zero.
func TestMCP_ListingThatNeverEndsIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name, mode, op string
		bound          map[string]any
	}{
		{"tools/list held, call_timeout", "stall", "list tools did not finish in 1s", map[string]any{"call_timeout": "1s"}},
		{"initialize held, list_timeout", "mute", "connect did not finish in 1s", map[string]any{"list_timeout": "1s", "call_timeout": "1m"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			entry := faultsEntry(t, tt.bound)
			entry["env"] = map[string]string{mcpServerEnv: tt.mode}
			withMCPConfig(t, map[string]any{"stuck": entry})
			dir := t.TempDir()
			r := rathProcWithin(t, time.Minute, "--dir", dir, "tools")
			if r.code == 0 || !strings.Contains(r.stderr, "server stuck: "+tt.op) {
				t.Errorf("rath tools: exit %d\nstderr: %s", r.code, r.stderr)
			}
			cas := writeCassette(t, "never reached")
			r = rathProcWithin(t, time.Minute, "--dir", dir, "run", "--cassette", cas, "--tools", "stuck.*", "--no-stream", "list")
			if r.code == 0 || !strings.Contains(r.stderr, "mcp server stuck") || !strings.Contains(r.stderr, tt.op) {
				t.Errorf("rath run: exit %d\nstderr: %s", r.code, r.stderr)
			}
		})
	}
}
