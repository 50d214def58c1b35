package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun_ExportImportRoundTrip(t *testing.T) {
	w := seed(t)
	files := map[string]string{}
	for _, id := range []string{w.merged, w.fork, w.root} { // children first
		out := mustRun(t, w.dir, "export", id)
		if !strings.HasPrefix(out, `{"record_type":"header"`) || !strings.Contains(out, `"record_type":"trailer"`) {
			t.Fatalf("export %s:\n%s", id, out)
		}
		files[id] = filepath.Join(t.TempDir(), id+".jsonl")
		if err := os.WriteFile(files[id], []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy")
	mustRun(t, dst, "import", files[w.merged], files[w.fork], files[w.root])
	for _, id := range []string{w.root, w.fork, w.merged} {
		want := decodeJSON[shown](t, mustRun(t, w.dir, "show", id, "--json"))
		got := decodeJSON[shown](t, mustRun(t, dst, "show", id, "--json"))
		if diff := cmp.Diff(want.Chunks, got.Chunks); diff != "" {
			t.Fatalf("%s chunks after round trip (-want +got):\n%s", id, diff)
		}
		if diff := cmp.Diff(want.Session.Parents, got.Session.Parents); diff != "" {
			t.Fatalf("%s parents after round trip (-want +got):\n%s", id, diff)
		}
	}
	// -o writes the same bytes to a file.
	out := filepath.Join(t.TempDir(), "root.jsonl")
	mustRun(t, w.dir, "export", w.root, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != mustRun(t, w.dir, "export", w.root) {
		t.Fatal("export -o differs from export to stdout")
	}
	if r := rathCLI(t, w.dir, "export", "s-nope", "-o", filepath.Join(t.TempDir(), "x.jsonl")); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("export unknown: %d %q", r.code, r.stderr)
	}
}

type importReport struct {
	Imported int `json:"imported"`
	Failed   int `json:"failed"`
	Files    []struct {
		File       string   `json:"file"`
		Session    string   `json:"session"`
		Chunks     int      `json:"chunks"`
		Incomplete bool     `json:"incomplete"`
		Parents    []string `json:"parents"`
		Error      string   `json:"error"`
	} `json:"files"`
}

func TestRun_Import(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	td := func(name string) string { return filepath.Join("testdata", name) }
	// A bad file among good ones, children before their parent.
	r := rathCLI(t, dir, "import", "--json", td("crashed.jsonl"), td("broken.jsonl"), td("child.jsonl"), td("parent.jsonl"))
	if r.code != 1 || !strings.Contains(r.stderr, "1 of 4 files failed") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	rep := decodeJSON[importReport](t, r.stdout)
	if rep.Imported != 3 || rep.Failed != 1 {
		t.Fatalf("report = %+v", rep)
	}
	crashed, broken, child, parent := rep.Files[0], rep.Files[1], rep.Files[2], rep.Files[3]
	if !crashed.Incomplete || crashed.Chunks != 1 || !cmp.Equal(crashed.Parents, []string{"py-parent"}) {
		t.Fatalf("crashed = %+v", crashed)
	}
	if broken.Error == "" || !strings.Contains(broken.Error, "broken.jsonl:4") || broken.Chunks != 0 {
		t.Fatalf("broken = %+v", broken)
	}
	if child.Chunks != 3 || !cmp.Equal(child.Parents, []string{"py-parent"}) || parent.Chunks != 4 {
		t.Fatalf("child = %+v parent = %+v", child, parent)
	}
	graph := mustRun(t, dir, "graph")
	if strings.Count(graph, "-->|fork|") != 2 {
		t.Fatalf("graph lacks the imported fork edges:\n%s", graph)
	}
	if out := mustRun(t, dir, "sessions"); strings.Contains(out, "py-broken") || !strings.Contains(out, "import*") {
		t.Fatalf("sessions after import:\n%s", out)
	}

	// Importing the same session again is refused; the text report says why.
	r = rathCLI(t, dir, "import", td("parent.jsonl"))
	if r.code != 1 || !strings.Contains(r.stdout, "already in the store") || !strings.Contains(r.stderr, "1 of 1 files failed") {
		t.Fatalf("re-import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := rathCLI(t, dir, "import", td("missing.jsonl")); r.code != 1 || !strings.Contains(r.stdout, "no such file") {
		t.Fatalf("missing file: exit %d %q", r.code, r.stdout)
	}
	if r := rathCLI(t, dir, "import"); r.code != 2 || !strings.Contains(r.stderr, "Try: rath import") {
		t.Fatalf("import without files: exit %d %q", r.code, r.stderr)
	}
}
