package builtin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
)

func h(s string) string { return eventlog.BlobHash([]byte(s)) }

// checkBlobs asserts every non-empty hash in files has its content stored
// as a blob, equal to want[hash].
func checkBlobs(t *testing.T, get func(string) string, files []events.FileChange, want map[string]string) {
	t.Helper()
	for _, f := range files {
		for _, hash := range []string{f.Before, f.After} {
			if hash == "" {
				continue
			}
			if got := get(hash); got != want[hash] {
				t.Errorf("%s: blob %.8s = %q, want %q", f.Path, hash, got, want[hash])
			}
		}
	}
}

func TestEvidence_Write(t *testing.T) {
	rt := MustOpen(t, nil)
	s, dir := placed(t, rt, "local")
	writeFiles(t, dir, map[string]string{"a.txt": "old\n", "same.txt": "same\n"})
	got := runAgent(t, rt, s, allTools(t, rt),
		call{"replace", "write_workspace_file", `{"path":"a.txt","content":"new\n"}`},
		call{"create", "write_workspace_file", `{"path":"sub/b.txt","content":"bee\n"}`},
		call{"same", "write_workspace_file", `{"path":"same.txt","content":"same\n"}`},
	)
	tests := []struct {
		id      string
		want    []events.FileChange
		content string
	}{
		{"replace", []events.FileChange{{Path: "a.txt", Before: h("old\n"), After: h("new\n")}}, "replaced a.txt (4 bytes, was 4)"},
		{"create", []events.FileChange{{Path: "sub/b.txt", After: h("bee\n")}}, "created sub/b.txt (4 bytes)"},
		{"same", []events.FileChange{{Path: "same.txt", Before: h("same\n"), After: h("same\n")}}, "same.txt already had this content (5 bytes); nothing changed"},
	}
	contents := map[string]string{h("old\n"): "old\n", h("new\n"): "new\n", h("bee\n"): "bee\n", h("same\n"): "same\n"}
	for _, tt := range tests {
		o := got[tt.id]
		if diff := cmp.Diff(tt.want, o.ret.Files); diff != "" {
			t.Errorf("%s: files (-want +got):\n%s", tt.id, diff)
		}
		if o.chunk.Content != tt.content {
			t.Errorf("%s: content %q, want %q", tt.id, o.chunk.Content, tt.content)
		}
		if o.ret.ExitCode != nil {
			t.Errorf("%s: exit code recorded for a file write", tt.id)
		}
		checkBlobs(t, func(hash string) string { return blob(t, rt, hash) }, o.ret.Files, contents)
	}
	if data, _ := readHost(dir + "/a.txt"); data != "new\n" {
		t.Errorf("a.txt = %q", data)
	}
}

func TestEvidence_Commands(t *testing.T) {
	rt := MustOpen(t, nil)
	tools := allTools(t, rt)
	start := map[string]string{"keep.txt": "keep\n", "mod.txt": "before\n", "del.txt": "gone soon\n", ".git/HEAD": "ref: main\n"}
	want := []events.FileChange{
		{Path: "del.txt", Before: h("gone soon\n")},
		{Path: "mod.txt", Before: h("before\n"), After: h("after\n")},
		{Path: "sub/new.txt", After: h("new\n")},
	}
	contents := map[string]string{h("gone soon\n"): "gone soon\n", h("before\n"): "before\n", h("after\n"): "after\n", h("new\n"): "new\n"}
	for _, tc := range []struct{ name, tool, args string }{
		{"shell", "run_shell_command", `{"cmd":"mkdir sub && echo new > sub/new.txt && echo after > mod.txt && rm del.txt && echo x > .git/HEAD"}`},
		{"python", "run_code", args(map[string]string{"code": "import os\nos.mkdir('sub')\nopen('sub/new.txt','w').write('new\\n')\nopen('mod.txt','w').write('after\\n')\nos.remove('del.txt')\nopen('.git/HEAD','w').write('x')"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := placed(t, rt, "local")
			writeFiles(t, dir, start)
			o := runAgent(t, rt, s, tools, call{"c", tc.tool, tc.args})["c"]
			if o.ret.ErrorKind != "" {
				t.Fatalf("%s: %s", o.ret.ErrorKind, o.ret.Error)
			}
			if diff := cmp.Diff(want, o.ret.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			checkBlobs(t, func(hash string) string { return blob(t, rt, hash) }, o.ret.Files, contents)
			if !strings.Contains(o.chunk.Content, "[files changed: del.txt (deleted), mod.txt (modified), sub/new.txt (created)]") {
				t.Errorf("content %q lacks the change summary", o.chunk.Content)
			}
		})
	}
}

func TestEvidence_TrackingBounds(t *testing.T) {
	rt := MustOpen(t, nil)
	tests := []struct {
		name     string
		tracking builtin.Tracking
		files    map[string]string
		cmd      string
		want     []events.FileChange
		note     string
	}{
		{name: "too many files", tracking: builtin.Tracking{MaxFiles: 2},
			files: map[string]string{"a": "1", "b": "2", "c": "3"}, cmd: "echo x > a",
			note: "[file changes not tracked: the workspace has more than the 2 files tracked; tracking is off for this command]"},
		{name: "too many bytes", tracking: builtin.Tracking{MaxBytes: 10},
			files: map[string]string{"a": "123456", "b": "123456"}, cmd: "echo x > a",
			note: "[file changes not tracked: the workspace's files add up to more than the 10 bytes tracked]"},
		{name: "big file", tracking: builtin.Tracking{MaxFileBytes: 8},
			files: map[string]string{"big": "0123456789", "small": "s"}, cmd: "echo more >> big; echo t > small",
			want: []events.FileChange{{Path: "small", Before: h("s"), After: h("t\n")}},
			note: "[changed but not recorded, larger than the 8 bytes tracked: big]"},
		{name: "file grows past the bound", tracking: builtin.Tracking{MaxFileBytes: 8},
			files: map[string]string{"f": "s"}, cmd: "echo 0123456789 > f",
			note: "[changed but not recorded, larger than the 8 bytes tracked: f]"},
		{name: "big file shrinks", tracking: builtin.Tracking{MaxFileBytes: 8},
			files: map[string]string{"f": "0123456789"}, cmd: "echo s > f",
			note: "[changed but not recorded, larger than the 8 bytes tracked: f]"},
		{name: "big file deleted, big file created", tracking: builtin.Tracking{MaxFileBytes: 8},
			files: map[string]string{"old": "0123456789"}, cmd: "rm old; echo 0123456789 > new",
			note: "[changed but not recorded, larger than the 8 bytes tracked: new, old]"},
		{name: "big file untouched", tracking: builtin.Tracking{MaxFileBytes: 8},
			files: map[string]string{"big": "0123456789"}, cmd: "cat big > /dev/null"},
		{name: "off", tracking: builtin.Tracking{Off: true},
			files: map[string]string{"a": "1"}, cmd: "echo x > a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, err := builtin.NewWith(rt.Sandboxes(), builtin.Options{Tracking: tt.tracking}, "run_shell_command")
			if err != nil {
				t.Fatal(err)
			}
			s, dir := placed(t, rt, "local")
			writeFiles(t, dir, tt.files)
			o := runAgent(t, rt, s, tools, call{"c", "run_shell_command", args(map[string]string{"cmd": tt.cmd})})["c"]
			if diff := cmp.Diff(tt.want, o.ret.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if tt.note != "" && !strings.Contains(o.chunk.Content, tt.note) {
				t.Errorf("content %q lacks %q", o.chunk.Content, tt.note)
			}
			if tt.note == "" && strings.Contains(o.chunk.Content, "[") {
				t.Errorf("content %q has a note", o.chunk.Content)
			}
		})
	}
}

func TestRead_BinaryAndTruncated(t *testing.T) {
	rt := MustOpen(t, nil)
	tools, err := builtin.NewWith(rt.Sandboxes(), builtin.Options{MaxReadBytes: 10, MaxListEntries: 2}, "read_workspace_file", "list_workspace_files")
	if err != nil {
		t.Fatal(err)
	}
	s, dir := placed(t, rt, "local")
	writeFiles(t, dir, map[string]string{
		"img.png":  "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"long.txt": "héllo wörld, and more",
	})
	got := runAgent(t, rt, s, tools,
		call{"bin", "read_workspace_file", `{"path":"img.png"}`},
		call{"long", "read_workspace_file", `{"path":"long.txt"}`},
		call{"list", "list_workspace_files", `{}`},
		call{"dir", "read_workspace_file", `{"path":"."}`},
		call{"missing", "read_workspace_file", `{"path":"nope"}`},
	)
	want := map[string]string{
		"bin":  "img.png is a binary file of 16 bytes; its content is not shown.",
		"long": "héllo wö\n[truncated: showing the first 10 of 23 bytes; use run_shell_command with sed -n, head or tail to see the rest]",
		"list": "img.png (16 bytes)\nlong.txt (23 bytes)",
	}
	for id, w := range want {
		if got[id].chunk.Content != w {
			t.Errorf("%s: content %q, want %q", id, got[id].chunk.Content, w)
		}
	}
	for id, w := range map[string]string{"dir": `read ".": sandbox: is a directory`, "missing": `read "nope": sandbox: not found`} {
		if got[id].ret.ErrorKind != flow.ToolErrFailed || !strings.Contains(got[id].ret.Error, w) {
			t.Errorf("%s: error %s %q, want it to contain %q", id, got[id].ret.ErrorKind, got[id].ret.Error, w)
		}
	}
}

func TestList_Truncated(t *testing.T) {
	rt := MustOpen(t, nil)
	tools, err := builtin.NewWith(rt.Sandboxes(), builtin.Options{MaxListEntries: 2}, "list_workspace_files")
	if err != nil {
		t.Fatal(err)
	}
	s, dir := placed(t, rt, "local")
	writeFiles(t, dir, map[string]string{"a": "", "b": "", "c/d": ""})
	o := runAgent(t, rt, s, tools, call{"l", "list_workspace_files", `{"recursive":true}`})["l"]
	want := "a (0 bytes)\nb (0 bytes)\n[truncated: showing 2 of 4 entries; list a subdirectory to see more]"
	if o.chunk.Content != want {
		t.Errorf("content %q, want %q", o.chunk.Content, want)
	}
}

func TestShell_OutputTruncated(t *testing.T) {
	rt := MustOpen(t, nil)
	s, _ := placed(t, rt, "local")
	o := runAgent(t, rt, s, allTools(t, rt), call{"c", "run_shell_command", `{"cmd":"seq 1 100000; head -c 100 /dev/zero >&2"}`})["c"]
	for _, w := range []string{"stdout:\n1\n2\n3\n", "[stdout truncated: showing the first 65536 of 588895 bytes]", "stderr:\n[binary output, 100 bytes, not shown]"} {
		if !strings.Contains(o.chunk.Content, w) {
			t.Errorf("content lacks %q:\n%.300s ... %s", w, o.chunk.Content, o.chunk.Content[max(0, len(o.chunk.Content)-300):])
		}
	}
}

func TestRunCode_Errors(t *testing.T) {
	rt := MustOpen(t, nil)
	s, _ := placed(t, rt, "local")
	got := runAgent(t, rt, s, allTools(t, rt),
		call{"ruby", "run_code", `{"code":"puts 1","language":"ruby"}`},
		call{"timeout", "run_code", `{"code":"import time\nprint('started', flush=True)\ntime.sleep(30)","timeout":0.5}`},
		call{"too long", "run_code", `{"code":"print(1)","timeout":100000}`},
		call{"delimiter", "run_code", args(map[string]string{"language": "bash", "code": "cat <<'RATH_CODE_EOF'\n$HOME `x` RATH_CODE_EOF_1\nRATH_CODE_EOF"})},
		call{"exit 127", "run_code", `{"code":"exit 127","language":"bash"}`},
	)
	tests := []struct {
		id, kind, msg string
	}{
		{"ruby", flow.ToolErrFailed, `builtin: unsupported language "ruby" (supported: python, bash, go, node)`},
		{"timeout", flow.ToolErrTimeout, "sandbox: command timed out after 500ms (the command was killed); output so far:\nexit code: -1\nstdout:\nstarted"},
		{"too long", flow.ToolErrSchema, "timeout"},
	}
	for _, tt := range tests {
		o := got[tt.id]
		if o.ret.ErrorKind != tt.kind || !strings.Contains(o.ret.Error, tt.msg) {
			t.Errorf("%s: error %s %q, want %s containing %q", tt.id, o.ret.ErrorKind, o.ret.Error, tt.kind, tt.msg)
		}
	}
	if c := got["timeout"].ret.ExitCode; c == nil || *c != -1 {
		t.Errorf("timeout: exit code %v, want -1", c)
	}
	if d := got["delimiter"]; d.ret.ErrorKind != "" || !strings.Contains(d.chunk.Content, "stdout:\n$HOME `x` RATH_CODE_EOF_1") {
		t.Errorf("delimiter: %s %q", d.ret.Error, d.chunk.Content)
	}
	// A program that exits 127 itself is not a missing language.
	if e := got["exit 127"]; e.ret.ErrorKind != "" || *e.ret.ExitCode != 127 {
		t.Errorf("exit 127: %s %q", e.ret.Error, e.chunk.Content)
	}
}

func TestNew(t *testing.T) {
	rt := MustOpen(t, nil)
	all, err := builtin.New(rt.Sandboxes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	parallel := map[string]bool{}
	for _, tool := range all {
		names = append(names, tool.Name())
		ps, ok := tool.(flow.ParallelSafe)
		parallel[tool.Name()] = ok && ps.ParallelSafe()
	}
	if diff := cmp.Diff(builtin.Names(), names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	wantParallel := map[string]bool{"run_shell_command": false, "read_workspace_file": true, "write_workspace_file": false,
		"list_workspace_files": true, "workspace_path_exists": true, "run_code": false}
	if diff := cmp.Diff(wantParallel, parallel); diff != "" {
		t.Errorf("parallel safe (-want +got):\n%s", diff)
	}
	some, err := builtin.New(rt.Sandboxes(), "run_code", "read_workspace_file")
	if err != nil || len(some) != 2 || some[0].Name() != "run_code" {
		t.Errorf("New(run_code, read_workspace_file) = %v, %v", some, err)
	}
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{[]string{"read_file"}, `builtin: unknown tool "read_file" (valid: run_shell_command, read_workspace_file, write_workspace_file, list_workspace_files, workspace_path_exists, run_code)`},
		{[]string{"run_code", "run_code"}, `builtin: tool "run_code" named twice`},
	} {
		_, err := builtin.New(rt.Sandboxes(), tt.names...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%v) error = %v, want %s", tt.names, err, tt.want)
		}
	}
	if _, err := builtin.New(nil); err != builtin.ErrNoPool {
		t.Errorf("New(nil) = %v", err)
	}
	// Schema validation in the loop: additional and missing arguments.
	s, _ := placed(t, rt, "local")
	got := runAgent(t, rt, s, all,
		call{"extra", "read_workspace_file", `{"path":"a","mode":"r"}`},
		call{"missing", "write_workspace_file", `{"path":"a"}`},
	)
	for id, o := range got {
		if o.ret.ErrorKind != flow.ToolErrSchema {
			t.Errorf("%s: error kind %q, want schema_violation", id, o.ret.ErrorKind)
		}
	}
}

func TestRunCode_MissingLanguage(t *testing.T) {
	// A local backend whose commands see an empty PATH: no interpreter
	// can be found, as in a minimal container image.
	reg := sandbox.NewRegistry(&local.Backend{Env: map[string]string{"PATH": t.TempDir()}})
	rt := MustOpen(t, reg)
	s, dir := placed(t, rt, "local")
	got := runAgent(t, rt, s, allTools(t, rt),
		call{"python", "run_code", `{"code":"print(1)"}`},
		call{"node", "run_code", `{"code":"console.log(1)","language":"javascript"}`},
	)
	for id, program := range map[string]string{"python": "python3", "node": "node"} {
		o := got[id]
		want := fmt.Sprintf("builtin: run_code: language %s needs %s, which is not installed in sandbox local:%s", id, program, dir)
		if o.ret.ErrorKind != flow.ToolErrFailed || !strings.Contains(o.ret.Error, want) {
			t.Errorf("%s: error %s %q, want it to contain %q", id, o.ret.ErrorKind, o.ret.Error, want)
		}
		if o.ret.Backend != "local" || o.ret.ExitCode == nil || *o.ret.ExitCode != 127 {
			t.Errorf("%s: evidence backend %q exit %v", id, o.ret.Backend, o.ret.ExitCode)
		}
	}
}
