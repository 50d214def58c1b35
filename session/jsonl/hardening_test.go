package jsonl_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session/jsonl"
)

const (
	header  = `{"record_type":"header","id":%q,"parent_session_ids":[%s],"lineage_kind":"root","sandbox_backend":%q,"sandbox_spec":%q}` + "\n"
	chunk0  = `{"record_type":"chunk","index":0,"kind":"user","payload":{"content":%q}}` + "\n"
	trailer = `{"record_type":"trailer","final_chunk_count":1}` + "\n"
)

func sessionFile(id, parent, backend, spec, content string) string {
	parents := ""
	if parent != "" {
		parents = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(header, id, parents, backend, spec) + fmt.Sprintf(chunk0, content) + trailer
}

func TestImport_LineTooLong(t *testing.T) {
	tests := []struct {
		name    string
		opts    jsonl.Options
		content int
	}{
		{"option", jsonl.Options{MaxLineBytes: 1024}, 2000},
		{"default", jsonl.Options{}, jsonl.MaxLineBytes + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := MustOpen(t)
			path := filepath.Join(t.TempDir(), "long.jsonl")
			if err := os.WriteFile(path, []byte(sessionFile("long", "", "", "", strings.Repeat("x", tt.content))), 0o644); err != nil {
				t.Fatal(err)
			}
			before := head(t, rt)
			rep, err := jsonl.ImportWith(t.Context(), rt.Sessions(), tt.opts, path)
			var pe *jsonl.ParseError
			if !errors.As(err, &pe) || !errors.Is(err, jsonl.ErrLineTooLong) || !errors.Is(err, jsonl.ErrMalformed) {
				t.Fatalf("err = %v, want a *ParseError matching ErrLineTooLong", err)
			}
			if pe.File != path || pe.Line != 2 || rep.Files[0].Err == nil {
				t.Fatalf("error names %s:%d, want %s:2", pe.File, pe.Line, path)
			}
			if got := head(t, rt); got != before {
				t.Fatalf("the log grew from %d to %d events", before, got)
			}
		})
	}
}

// headerFirst hands out its header line alone, then calls before the
// first read of the rest.
type headerFirst struct {
	header, rest []byte
	before       func()
	started      bool
}

func (r *headerFirst) Read(p []byte) (int, error) {
	if len(r.header) > 0 {
		n := copy(p, r.header)
		r.header = r.header[n:]
		return n, nil
	}
	if !r.started {
		r.started = true
		r.before()
	}
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// Import holds one session at a time: a file's chunks are read only once
// the files before it in import order are written.
func TestImport_Streams(t *testing.T) {
	rt := MustOpen(t)
	child := sessionFile("st-child", "st-parent", "", "", "child")
	i := strings.Index(child, "\n") + 1
	parentWritten := false
	r := &headerFirst{header: []byte(child[:i]), rest: []byte(child[i:]), before: func() {
		_, err := rt.Session(t.Context(), "st-parent")
		parentWritten = err == nil
	}}
	_, err := jsonl.ImportSources(t.Context(), rt.Sessions(),
		jsonl.Source{Name: "child.jsonl", Reader: r},
		jsonl.Source{Name: "parent.jsonl", Reader: strings.NewReader(sessionFile("st-parent", "", "", "", "parent"))})
	if err != nil {
		t.Fatal(err)
	}
	if !parentWritten {
		t.Fatal("the child's chunks were read before the parent was written: the import buffers every file")
	}
}

// A file does not choose where the imported session's tools run.
func TestImport_PlacementIsNotTrusted(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "work"), 0o755)
	if err := os.Symlink("/", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	policy := jsonl.UnderRoots(root)
	tests := []struct {
		name, backend, spec string
		opts                jsonl.Options
		accepted            bool
	}{
		{"root by default", "local", "/", jsonl.Options{}, false},
		{"inside by default", "local", filepath.Join(root, "work"), jsonl.Options{}, false},
		{"root under a policy", "local", "/", jsonl.Options{Placement: policy}, false},
		{"inside", "local", filepath.Join(root, "work"), jsonl.Options{Placement: policy}, true},
		{"bwrap inside, not created yet", "bwrap", filepath.Join(root, "new", "ws"), jsonl.Options{Placement: policy}, true},
		{"climbing out", "local", root + "/work/../../etc", jsonl.Options{Placement: policy}, false},
		{"link out", "local", filepath.Join(root, "link", "etc"), jsonl.Options{Placement: policy}, false},
		{"relative", "local", "./work", jsonl.Options{Placement: policy}, false},
		{"other backend", "opensandbox", `{"image":"x"}`, jsonl.Options{Placement: policy}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := MustOpen(t)
			id := fmt.Sprintf("pl-%d", i)
			rep, err := jsonl.ImportSourcesWith(t.Context(), rt.Sessions(), tt.opts,
				jsonl.Source{Name: id + ".jsonl", Reader: strings.NewReader(sessionFile(id, "", tt.backend, tt.spec, "hi"))})
			if err != nil {
				t.Fatal(err)
			}
			declared := events.Placement{Backend: tt.backend, Spec: tt.spec}
			s, err := rt.Session(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			fr := rep.Files[0]
			want := events.Placement{}
			if tt.accepted {
				want = declared
			}
			if s.Placement() != want || fr.Placement != want || fr.DeclaredPlacement != declared || (fr.PlacementRefused == "") != tt.accepted {
				t.Fatalf("session placement %+v, report %+v / %+v refused %q", s.Placement(), fr.Placement, fr.DeclaredPlacement, fr.PlacementRefused)
			}
			evs, err := rt.Store().ReadStream(t.Context(), id, 1)
			if err != nil {
				t.Fatal(err)
			}
			p, err := evs[0].Decode()
			if err != nil {
				t.Fatal(err)
			}
			imp := p.(*events.SessionImported)
			if imp.DeclaredPlacement == nil || *imp.DeclaredPlacement != declared || imp.Placement != want {
				t.Fatalf("session.imported = %+v", imp)
			}
		})
	}
}

// Options.Progress counts every file, the failing ones too.
func TestImport_Progress(t *testing.T) {
	rt := MustOpen(t)
	dir := t.TempDir()
	var files []string
	for i, body := range []string{sessionFile("p1", "", "", "", "one"), "not json\n", sessionFile("p2", "", "", "", "two")} {
		path := filepath.Join(dir, fmt.Sprintf("f%d.jsonl", i))
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	var seen []string
	_, err := jsonl.ImportWith(t.Context(), rt.Sessions(), jsonl.Options{Progress: func(done, total int64) {
		seen = append(seen, fmt.Sprintf("%d/%d", done, total))
	}}, files...)
	if err == nil {
		t.Fatal("the malformed file did not fail")
	}
	if fmt.Sprint(seen) != "[1/3 2/3 3/3]" { // the malformed file first: its header failed
		t.Fatalf("progress = %v", seen)
	}
}

// A session file cannot name one of rath's own streams: an imported
// session called approval:ID would pre-empt the request a run makes under
// that id (ids derive from the session and the call), lease:RUN a
// worker's lease, rath-redactions the redaction record. Each is refused
// with ErrMalformed and nothing is written.
func TestImport_ReservedIDsRefused(t *testing.T) {
	for _, id := range []string{"approval:apr-0123456789abcdef", "lease:run-1", "submit:run-1", "resume:run-1",
		"run-nightly", "rath-redactions", "a b", "a\u202eb", "../x"} {
		t.Run(id, func(t *testing.T) {
			rt := MustOpen(t)
			head, _ := rt.Store().Head(t.Context())
			rep, err := jsonl.ImportSourcesWith(t.Context(), rt.Sessions(), jsonl.Options{},
				jsonl.Source{Name: "x.jsonl", Reader: strings.NewReader(sessionFile(id, "", "", "", "hi"))})
			if err == nil && len(rep.Files) == 1 {
				err = rep.Files[0].Err
			}
			if err == nil {
				t.Fatalf("imported a session named %q", id)
			}
			if !errors.Is(err, jsonl.ErrMalformed) {
				t.Errorf("error %v, want ErrMalformed", err)
			}
			if after, _ := rt.Store().Head(t.Context()); after != head {
				t.Errorf("the log changed from %+v to %+v", head, after)
			}
		})
	}
}
