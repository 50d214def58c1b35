package sandboxtest

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/gorath/rath/sandbox"
)

// testWalk checks sandbox.Walker, for the sandboxes that implement it:
// the same entries as a recursive List, SkipDir and SkipAll honoured.
func (s *suite) testWalk(t *testing.T) {
	sb := s.open(t)
	w, ok := sb.(sandbox.Walker)
	if !ok {
		t.Skipf("%s sandboxes do not implement sandbox.Walker (optional)", s.b.Name())
	}
	for _, p := range []string{"a.txt", "d/b.txt", "d/e/c.txt", "skip/x.txt"} {
		s.write(t, sb, p, p)
	}
	list, err := sb.List(t.Context(), ".", true)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, e := range list {
		want = append(want, e.Path)
	}
	if err := w.Walk(t.Context(), ".", func(e sandbox.FileInfo) error {
		got = append(got, e.Path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Walk = %q, List = %q", got, want)
	}

	got = nil
	w.Walk(t.Context(), ".", func(e sandbox.FileInfo) error {
		got = append(got, e.Path)
		if e.Path == "skip" {
			return fs.SkipDir
		}
		return nil
	})
	if slices.Contains(got, "skip/x.txt") || !slices.Contains(got, "skip") {
		t.Errorf("SkipDir: walked %q", got)
	}

	n := 0
	if err := w.Walk(t.Context(), ".", func(sandbox.FileInfo) error {
		n++
		return fs.SkipAll
	}); err != nil || n != 1 {
		t.Errorf("SkipAll: %d calls, err %v", n, err)
	}
	wantErr(t, "walk a missing dir", w.Walk(t.Context(), "missing", func(sandbox.FileInfo) error { return nil }), sandbox.ErrNotFound, "missing")
	wantErr(t, "walk a file", w.Walk(t.Context(), "a.txt", func(sandbox.FileInfo) error { return nil }), sandbox.ErrNotDir, "a.txt")
}
