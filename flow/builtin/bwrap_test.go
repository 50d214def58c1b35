//go:build integration

package builtin_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
)

// The same cases as on local, inside bubblewrap (make deps installs it).

func TestTools_Bwrap(t *testing.T) { testEachTool(t, "bwrap") }

func TestTools_EscapesBwrap(t *testing.T) { testEscapes(t, "bwrap") }

func TestEvidence_CommandsBwrap(t *testing.T) {
	rt := MustOpen(t, nil)
	s, dir := placed(t, rt, "bwrap")
	writeFiles(t, dir, map[string]string{"mod.txt": "before\n", "del.txt": "x\n"})
	o := runAgent(t, rt, s, allTools(t, rt),
		call{"c", "run_shell_command", `{"cmd":"pwd > where.txt && echo after > mod.txt && rm del.txt"}`})["c"]
	want := []events.FileChange{
		{Path: "del.txt", Before: h("x\n")},
		{Path: "mod.txt", Before: h("before\n"), After: h("after\n")},
		{Path: "where.txt", After: h("/workspace\n")},
	}
	if diff := cmp.Diff(want, o.ret.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	checkBlobs(t, func(hash string) string { return blob(t, rt, hash) }, o.ret.Files,
		map[string]string{h("x\n"): "x\n", h("before\n"): "before\n", h("after\n"): "after\n", h("/workspace\n"): "/workspace\n"})
	if !strings.HasPrefix(o.ret.SandboxID, "bwrap:") {
		t.Errorf("sandbox id %q", o.ret.SandboxID)
	}
}
