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
