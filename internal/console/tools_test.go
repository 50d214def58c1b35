package console_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/internal/console"
)

// A run's tool calls come with their arguments, outcome and the files
// they changed as line diffs; model-written file content stays escaped.
func TestRunTools_FileDiffs(t *testing.T) {
	f := newFixture(t, "")
	ctx := t.Context()
	tools, err := builtin.New(f.rt.Sandboxes(), builtin.WriteWorkspaceFile)
	if err != nil {
		t.Fatal(err)
	}
	p := flow.Scripted(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "w1", Name: builtin.WriteWorkspaceFile, Arguments: `{"path":"notes.txt","content":"one\ntwo\n"}`}}},
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "w2", Name: builtin.WriteWorkspaceFile, Arguments: `{"path":"notes.txt","content":"one\n<script>x</script>\n"}`}}},
		scripted.Entry{Content: "written"},
	)
	agent, err := flow.NewAgent("Write.", p, flow.WithTools(tools...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.rt.NewUserSession(ctx, "write notes")
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.To(ctx, "local", filepath.Join(t.TempDir(), "work")); err != nil {
		t.Fatal(err)
	}
	run, err := f.rt.Start(ctx, "writer", agent, s)
	if err != nil {
		t.Fatal(err)
	}
	body := f.get(t, "/api/runs/"+run.ID+"/tools", "")
	if strings.Contains(body, "<script>") {
		t.Fatalf("unescaped file content: %s", body)
	}
	v := decode[console.ToolsView](t, body)
	if len(v.Tools) != 2 || v.Tools[1].CallID != "w2" || len(v.Tools[1].Files) != 1 {
		t.Fatalf("tools = %+v", v.Tools)
	}
	fd := v.Tools[1].Files[0]
	var diff strings.Builder
	for _, l := range fd.Lines {
		diff.WriteString(l.Prefix() + l.Text + "\n")
	}
	if fd.Path != "notes.txt" || fd.Added != 1 || fd.Removed != 1 || !strings.Contains(diff.String(), "-two\n+<script>x</script>") {
		t.Fatalf("diff of %s (+%d -%d):\n%s", fd.Path, fd.Added, fd.Removed, diff.String())
	}
	if res, _ := f.do(t, "GET", "/api/runs/run-nosuch/tools", nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown run: %s", res.Status)
	}
}

// A command that exits non-zero shows its exit code and the tail of its
// stderr (escaped), not an empty error; a call waiting for a person says
// so, with the request's id.
func TestRunTools_ExitCodeStderrAndWaiting(t *testing.T) {
	f := newFixture(t, "")
	ctx := t.Context()
	tools, err := builtin.New(f.rt.Sandboxes(), builtin.RunShellCommand)
	if err != nil {
		t.Fatal(err)
	}
	p := flow.Scripted(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "x1", Name: builtin.RunShellCommand,
			Arguments: `{"cmd":"echo fine; printf 'first\\nbad thing \\033[31mred\\n' >&2; exit 3"}`}}},
		scripted.Entry{Content: "it failed"},
	)
	agent, err := flow.NewAgent("Run.", p, flow.WithTools(tools...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.rt.NewUserSession(ctx, "run it")
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.To(ctx, "local", filepath.Join(t.TempDir(), "work")); err != nil {
		t.Fatal(err)
	}
	run, err := f.rt.Start(ctx, "runner", agent, s)
	if err != nil {
		t.Fatal(err)
	}
	v := decode[console.ToolsView](t, f.get(t, "/api/runs/"+run.ID+"/tools", ""))
	if len(v.Tools) != 1 {
		t.Fatalf("tools = %+v", v.Tools)
	}
	tc := v.Tools[0]
	if tc.State != console.ToolError || tc.ExitCode == nil || *tc.ExitCode != 3 || tc.TailOf != "stderr" ||
		tc.Tail != "first\nbad thing \\x1b[31mred" || tc.Warning == "" {
		t.Fatalf("failed command: state %q exit %v tail of %q %q warning %q", tc.State, tc.ExitCode, tc.TailOf, tc.Tail, tc.Warning)
	}
	if len(tc.Fields) != 1 || tc.Fields[0].Name != "cmd" || !strings.HasPrefix(tc.Fields[0].Value, "echo fine;") {
		t.Fatalf("fields = %+v", tc.Fields)
	}

	waiting := waitingRun(t, f)
	v = decode[console.ToolsView](t, f.get(t, "/api/runs/"+waiting+"/tools", ""))
	if len(v.Tools) != 1 || v.Tools[0].State != console.ToolWaiting || v.Tools[0].Approval == nil || v.Tools[0].Approval.Status != "pending" {
		t.Fatalf("waiting call = %+v", v.Tools)
	}
	if v.Tools[0].Fields[0].Value != "hi <b>there</b>" {
		t.Fatalf("fields = %+v", v.Tools[0].Fields)
	}
}
