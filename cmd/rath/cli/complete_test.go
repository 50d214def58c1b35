package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCompletion_IDsFromTheStore(t *testing.T) {
	w := seed(t)
	cases := []struct {
		argv []string
		want []string
		not  []string
	}{
		{argv: []string{"__complete", "show", ""}, want: []string{w.root, w.fork, w.merged}},
		{argv: []string{"__complete", "merge", w.fork[:4]}, want: []string{w.fork}},
		{argv: []string{"__complete", "show", "zz-no-such"}, not: []string{w.root}},
	}
	for _, c := range cases {
		out := mustRun(t, w.dir, c.argv...)
		lines := strings.Split(out, "\n")
		for _, id := range c.want {
			if !slices.Contains(lines, id) {
				t.Errorf("rath %s: %q not offered:\n%s", strings.Join(c.argv, " "), id, out)
			}
		}
		for _, id := range c.not {
			if slices.Contains(lines, id) {
				t.Errorf("rath %s: %q offered:\n%s", strings.Join(c.argv, " "), id, out)
			}
		}
	}
}

func TestCompletion_NeverCreatesAStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	rathCLI(t, dir, "__complete", "show", "")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("completion touched %s: %v", dir, err)
	}
}

func TestVersionFlag(t *testing.T) {
	out := mustRun(t, t.TempDir(), "--version")
	if !strings.HasPrefix(out, "rath ") {
		t.Fatalf("rath --version = %q", out)
	}
	if bash := mustRun(t, t.TempDir(), "completion", "bash"); !strings.Contains(bash, "rath") {
		t.Fatalf("no bash completion script")
	}
}
