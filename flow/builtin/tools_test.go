package builtin_test

import (
	"strings"
	"testing"

	"github.com/gorath/rath/flow"
)

// toolCase is one call of one tool and what the model must read back.
type toolCase struct {
	name, tool, args string
	want             []string // substrings of the tool_result content
	isError          bool     // a result the tool marks as failed
	exitCode         *int     // nil: no exit code recorded
}

func intp(n int) *int { return &n }

// toolCases covers every tool once (and run_code in every language), on a
// workspace holding notes/a.txt = "hello\n".
func toolCases() []toolCase {
	return []toolCase{
		{name: "shell", tool: "run_shell_command", args: args(map[string]string{"cmd": "cat notes/a.txt; echo oops >&2; exit 3"}),
			want: []string{"exit code: 3", "stdout:\nhello", "stderr:\noops"}, isError: true, exitCode: intp(3)},
		{name: "shell no output", tool: "run_shell_command", args: `{"cmd":"true"}`,
			want: []string{"exit code: 0\n(no output)"}, exitCode: intp(0)},
		{name: "read", tool: "read_workspace_file", args: `{"path":"notes/a.txt"}`, want: []string{"hello\n"}},
		{name: "write", tool: "write_workspace_file", args: `{"path":"out/b.txt","content":"bee\n"}`, want: []string{"created out/b.txt (4 bytes)"}},
		{name: "list", tool: "list_workspace_files", args: `{"path":"","recursive":true}`, want: []string{"notes/\nnotes/a.txt (6 bytes)"}},
		{name: "list default", tool: "list_workspace_files", args: `{}`, want: []string{"notes/"}},
		{name: "exists dir", tool: "workspace_path_exists", args: `{"path":"notes"}`, want: []string{"true: notes is a directory"}},
		{name: "exists file", tool: "workspace_path_exists", args: `{"path":"notes/a.txt"}`, want: []string{"true: notes/a.txt is a file of 6 bytes"}},
		{name: "exists missing", tool: "workspace_path_exists", args: `{"path":"nope.txt"}`, want: []string{"false: nope.txt does not exist"}},
		{name: "python", tool: "run_code", args: args(map[string]string{"code": "print(open('notes/a.txt').read().strip(), 6*7)"}),
			want: []string{"exit code: 0", "stdout:\nhello 42"}, exitCode: intp(0)},
		{name: "bash", tool: "run_code", args: args(map[string]string{"language": "bash", "code": "x=$((6*7)); echo \"$x $(cat notes/a.txt)\""}),
			want: []string{"stdout:\n42 hello"}, exitCode: intp(0)},
		{name: "node", tool: "run_code", args: args(map[string]string{"language": "node", "code": "console.log(require('fs').readFileSync('notes/a.txt','utf8').trim(), 6*7)"}),
			want: []string{"stdout:\nhello 42"}, exitCode: intp(0)},
		{name: "go", tool: "run_code", args: args(map[string]string{"language": "go", "code": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(6 * 7) }"}),
			want: []string{"stdout:\n42"}, exitCode: intp(0)},
		{name: "python fails", tool: "run_code", args: args(map[string]string{"code": "raise SystemExit('bad input')"}),
			want: []string{"exit code: 1", "stderr:\nbad input"}, isError: true, exitCode: intp(1)},
	}
}

// testEachTool runs every case through an agent loop on backend, one case
// per subtest with its own workspace.
func testEachTool(t *testing.T, backend string) {
	rt := MustOpen(t, nil)
	tools := allTools(t, rt)
	for _, tc := range toolCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := placed(t, rt, backend)
			writeFiles(t, dir, map[string]string{"notes/a.txt": "hello\n"})
			got := runAgent(t, rt, s, tools, call{"c1", tc.tool, tc.args})["c1"]
			if got.ret.ErrorKind != "" {
				t.Fatalf("error %s: %s", got.ret.ErrorKind, got.ret.Error)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.chunk.Content, w) {
					t.Errorf("content %q does not contain %q", got.chunk.Content, w)
				}
			}
			if got.ret.Backend != backend || got.ret.SandboxID != backend+":"+dir {
				t.Errorf("evidence backend %q sandbox %q, want %q and %q", got.ret.Backend, got.ret.SandboxID, backend, backend+":"+dir)
			}
			if got.ret.IsError != tc.isError || (got.chunk.Meta["is_error"] == "true") != tc.isError {
				t.Errorf("is_error = %v (meta %v), want %v", got.ret.IsError, got.chunk.Meta, tc.isError)
			}
			switch {
			case tc.exitCode == nil && got.ret.ExitCode != nil:
				t.Errorf("exit code %d recorded for a tool that runs no command", *got.ret.ExitCode)
			case tc.exitCode != nil && (got.ret.ExitCode == nil || *got.ret.ExitCode != *tc.exitCode):
				t.Errorf("exit code = %v, want %d", got.ret.ExitCode, *tc.exitCode)
			}
		})
	}
}

func TestTools_Local(t *testing.T) { testEachTool(t, "local") }

// escapeCases must give errors naming the path, never content: the
// workspace's parent holds secret.txt, and the first call plants a symlink
// to it (and one to /etc/passwd) with a shell command.
func escapeCases() []call {
	return []call{
		{"plant", "run_shell_command", `{"cmd":"ln -s ../secret.txt leak; ln -s /etc/passwd passwd"}`},
		{"relative", "read_workspace_file", `{"path":"../secret.txt"}`},
		{"absolute", "read_workspace_file", `{"path":"/etc/passwd"}`},
		{"symlink", "read_workspace_file", `{"path":"leak"}`},
		{"symlink abs", "read_workspace_file", `{"path":"passwd"}`},
		{"write out", "write_workspace_file", `{"path":"../evil.txt","content":"x"}`},
		{"write through link", "write_workspace_file", `{"path":"leak","content":"x"}`},
		{"list out", "list_workspace_files", `{"path":".."}`},
		{"exists out", "workspace_path_exists", `{"path":"../secret.txt"}`},
	}
}

func testEscapes(t *testing.T, backend string) {
	rt := MustOpen(t, nil)
	// The workspace is a subdirectory, so ".." is a directory the test owns.
	parent := hostDir(t)
	writeFiles(t, parent, map[string]string{"secret.txt": "TOP SECRET\n"})
	s := placeAt(t, rt, backend, parent+"/ws")
	calls := escapeCases()
	got := runAgent(t, rt, s, allTools(t, rt), calls...)
	if p := got["plant"].ret; p.ErrorKind != "" || p.ExitCode == nil || *p.ExitCode != 0 {
		t.Fatalf("planting the symlinks failed: %+v", got["plant"])
	}
	for _, c := range calls[1:] {
		o := got[c.id]
		if o.ret.ErrorKind != flow.ToolErrFailed {
			t.Errorf("%s: error kind %q, want %q (content %q)", c.id, o.ret.ErrorKind, flow.ToolErrFailed, o.chunk.Content)
			continue
		}
		if !strings.Contains(o.ret.Error, "path escapes the workspace") {
			t.Errorf("%s: error %q does not say the path escapes", c.id, o.ret.Error)
		}
		for _, leak := range []string{"TOP SECRET", "root:"} {
			if strings.Contains(o.chunk.Content, leak) {
				t.Errorf("%s: content leaks %q: %q", c.id, leak, o.chunk.Content)
			}
		}
		if o.ret.Backend != backend {
			t.Errorf("%s: backend %q", c.id, o.ret.Backend)
		}
	}
	if !strings.Contains(got["relative"].ret.Error, `"../secret.txt"`) {
		t.Errorf("error %q does not name the path", got["relative"].ret.Error)
	}
	if data, err := readHost(parent + "/secret.txt"); err != nil || data != "TOP SECRET\n" {
		t.Errorf("secret.txt = %q, %v: a write went through the symlink", data, err)
	}
	if _, err := readHost(parent + "/evil.txt"); err == nil {
		t.Error("evil.txt was written outside the workspace")
	}
}

func TestTools_EscapesLocal(t *testing.T) { testEscapes(t, "local") }

func TestTools_NoPlacement(t *testing.T) {
	rt := MustOpen(t, nil)
	s, err := rt.NewUserSession(t.Context(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	var calls []call
	for _, tc := range toolCases() {
		calls = append(calls, call{tc.name, tc.tool, tc.args})
	}
	got := runAgent(t, rt, s, allTools(t, rt), calls...)
	for _, c := range calls {
		o := got[c.id]
		if o.ret.ErrorKind != flow.ToolErrNoPlacement || o.chunk.Meta["error_kind"] != flow.ToolErrNoPlacement {
			t.Errorf("%s: error kind %q, want no_placement", c.id, o.ret.ErrorKind)
		}
		if !strings.Contains(o.chunk.Content, `s.To(ctx, "local", "./work")`) || !strings.Contains(o.chunk.Content, c.name) {
			t.Errorf("%s: message %q does not say how to place the session", c.id, o.chunk.Content)
		}
	}
}
