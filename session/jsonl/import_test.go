package jsonl_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
	"github.com/gorath/rath/session/jsonl"
)

var goodFiles = []struct {
	file       string
	id         string
	roles      []string
	incomplete bool
	placement  events.Placement
	usage      events.Usage
	declared   []string
}{
	{
		file: "openrath_basic.jsonl", id: "or-basic",
		roles:     []string{"system", "user", "assistant", "tool_result", "assistant"},
		placement: events.Placement{Backend: "local", Spec: "./work"},
		usage:     events.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
	},
	{file: "openrath_crashed.jsonl", id: "or-crashed", roles: []string{"user", "assistant"}, incomplete: true},
	{file: "openrath_empty.jsonl", id: "or-empty", roles: []string{}},
	{
		file: "openrath_tolerant.jsonl", id: "or-tolerant", roles: []string{"assistant", "tool_result"},
		placement: events.Placement{Backend: "opensandbox", Spec: `{"cpu":2,"image":"python:3.12"}`},
		declared:  []string{"or-missing"},
	},
}

func TestImport_GoodFiles(t *testing.T) {
	for _, tt := range goodFiles {
		t.Run(tt.file, func(t *testing.T) {
			ctx := t.Context()
			rt := MustOpen(t)
			rep, err := jsonl.Import(ctx, rt.Sessions(), fixture(tt.file))
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			fr := rep.Files[0]
			if fr.Session != tt.id || fr.Chunks != len(tt.roles) || fr.Incomplete != tt.incomplete || fr.Format != jsonl.FormatOpenRath {
				t.Fatalf("report = %+v", fr)
			}
			if diff := cmp.Diff(tt.declared, fr.DeclaredParents); diff != "" {
				t.Fatalf("declared parents (-want +got):\n%s", diff)
			}
			if len(fr.Parents) != 0 {
				t.Fatalf("linked parents %v, but none is in the store", fr.Parents)
			}
			s, err := rt.Session(ctx, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.roles, roles(s.Chunks())); diff != "" {
				t.Fatalf("roles (-want +got):\n%s", diff)
			}
			// A file's placement is provenance, never where tools run.
			if s.Placement() != (events.Placement{}) || s.Usage() != tt.usage || s.Lineage().Kind != session.KindImport {
				t.Fatalf("placement %+v usage %+v lineage %+v", s.Placement(), s.Usage(), s.Lineage())
			}
			if fr.DeclaredPlacement != tt.placement || (tt.placement != (events.Placement{})) != (fr.PlacementRefused != "") {
				t.Fatalf("report placement = %+v, refused %q", fr.DeclaredPlacement, fr.PlacementRefused)
			}
			row, err := rt.Reader().Session(ctx, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if row.Incomplete != tt.incomplete {
				t.Fatalf("stored incomplete = %v, want %v", row.Incomplete, tt.incomplete)
			}
			// One atomic append: the import event and one event per chunk.
			evs, err := rt.Store().ReadStream(ctx, tt.id, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1+len(tt.roles) || evs[0].Type != events.TypeSessionImported {
				t.Fatalf("stream has %d events, first %s", len(evs), evs[0].Type)
			}
		})
	}
}

func TestImport_BasicChunkFields(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	if _, err := jsonl.Import(ctx, rt.Sessions(), fixture("openrath_basic.jsonl"), fixture("openrath_tolerant.jsonl")); err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Session(ctx, "or-basic")
	want := []events.Chunk{
		{Role: "system", Content: "You are a careful coder."},
		{Role: "user", Content: "List the files."},
		{Role: "assistant", ToolCalls: []events.ToolCall{{ID: "call_1", Name: "list_workspace_files", Arguments: `{"path":"."}`}}},
		{Role: "tool_result", ToolCallID: "call_1", Name: "list_workspace_files", Content: "main.go\ngo.mod"},
		{Role: "assistant", Content: "There are two files."},
	}
	if diff := cmp.Diff(want, s.Chunks()); diff != "" {
		t.Fatalf("chunks (-want +got):\n%s", diff)
	}
	// Arguments stored as an object are kept as canonical JSON text.
	tol, _ := rt.Session(ctx, "or-tolerant")
	if got := tol.Chunk(0).ToolCalls[0].Arguments; got != `{"lang":"py","src":"print(1)"}` {
		t.Fatalf("object arguments = %s", got)
	}
}

var badFiles = []struct {
	file string
	line int
	want string
}{
	{"bad_truncated_last_line.jsonl", 3, "not valid JSON"},
	{"bad_chunk_before_header.jsonl", 1, "chunk before the header"},
	{"bad_duplicate_header.jsonl", 3, "second header (the first is on line 1)"},
	{"bad_index_gap.jsonl", 3, "index 2 where 1 was expected"},
	{"bad_index_not_from_zero.jsonl", 2, "index 1 where 0 was expected"},
	{"bad_trailer_count.jsonl", 4, "final_chunk_count 3, but the file has 2 chunks"},
	{"bad_unknown_kind.jsonl", 3, `unknown kind "observation"`},
	{"bad_unknown_record.jsonl", 2, `unknown record_type "checkpoint"`},
	{"bad_record_after_trailer.jsonl", 5, "after the trailer on line 4"},
	{"bad_empty.jsonl", 0, "no header record"},
	{"bad_tool_result_without_call_id.jsonl", 2, "tool_result chunk needs a tool_call_id"},
	{"bad_index_type.jsonl", 2, "invalid record"},
	{"bad_self_parent.jsonl", 1, "names itself as a parent"},
	{"bad_tool_call_type.jsonl", 2, `type "retrieval" is not function`},
	{"bad_header_without_id.jsonl", 1, "missing id"},
	{"bad_content_type.jsonl", 2, "payload"},
	{"bad_missing_payload.jsonl", 2, "missing payload"},
	{"bad_trailer_without_count.jsonl", 2, "trailer without final_chunk_count"},
}

func TestImport_BadFiles(t *testing.T) {
	rt := MustOpen(t)
	for _, tt := range badFiles {
		t.Run(tt.file, func(t *testing.T) {
			ctx := t.Context()
			before := head(t, rt)
			rep, err := jsonl.Import(ctx, rt.Sessions(), fixture(tt.file))
			var pe *jsonl.ParseError
			if !errors.As(err, &pe) || !errors.Is(err, jsonl.ErrMalformed) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.File != fixture(tt.file) || pe.Line != tt.line || !strings.Contains(pe.Error(), tt.want) {
				t.Fatalf("error %q (line %d), want line %d containing %q", pe, pe.Line, tt.line, tt.want)
			}
			if !errors.Is(rep.Files[0].Err, jsonl.ErrMalformed) || rep.Files[0].Chunks != 0 {
				t.Fatalf("report = %+v", rep.Files[0])
			}
			if got := head(t, rt); got != before {
				t.Fatalf("log grew from %d to %d events: a malformed file was partly imported", before, got)
			}
		})
	}
}

func TestImport_LineageParentsOutOfOrder(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	// Children first: the import must still write parents before children.
	rep, err := jsonl.Import(ctx, rt.Sessions(),
		fixture("lineage_merge.jsonl"), fixture("lineage_child.jsonl"), fixture("lineage_root.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range rep.Files {
		files = append(files, f.Session)
	}
	if diff := cmp.Diff([]string{"ln-merge", "ln-child", "ln-root"}, files); diff != "" {
		t.Fatalf("report is not in argument order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ln-child", "ln-root"}, rep.Files[0].Parents); diff != "" {
		t.Fatalf("merge linked parents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ln-child", "ln-root", "ln-elsewhere"}, rep.Files[0].DeclaredParents); diff != "" {
		t.Fatalf("merge declared parents (-want +got):\n%s", diff)
	}
	edges, err := rt.Reader().Edges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range edges {
		got = append(got, e.Parent+"->"+e.Child+":"+e.Kind)
	}
	want := []string{"ln-root->ln-child:fork", "ln-child->ln-merge:merge", "ln-root->ln-merge:merge"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("edges (-want +got):\n%s", diff)
	}
	m, _ := rt.Session(ctx, "ln-merge")
	if diff := cmp.Diff([]string{"ln-child", "ln-root"}, m.Parents()); diff != "" {
		t.Fatalf("merge parents (-want +got):\n%s", diff)
	}
	// The declared parent that never arrived stays in the event.
	evs, _ := rt.Store().ReadStream(ctx, "ln-merge", 1)
	p, _ := evs[0].Decode()
	if imp := p.(*events.SessionImported); !slices.Contains(imp.DeclaredParents, "ln-elsewhere") {
		t.Fatalf("declared parents lost: %+v", imp)
	}
}

func TestImport_ParentImportedInEarlierCall(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	if _, err := jsonl.Import(ctx, rt.Sessions(), fixture("lineage_root.jsonl")); err != nil {
		t.Fatal(err)
	}
	rep, err := jsonl.Import(ctx, rt.Sessions(), fixture("lineage_child.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ln-root"}, rep.Files[0].Parents); diff != "" {
		t.Fatalf("parents (-want +got):\n%s", diff)
	}
}

func TestImport_ExistingSessionIsSkipped(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	if _, err := jsonl.Import(ctx, rt.Sessions(), fixture("openrath_basic.jsonl")); err != nil {
		t.Fatal(err)
	}
	before := head(t, rt)
	rep, err := jsonl.Import(ctx, rt.Sessions(), fixture("openrath_basic.jsonl"), fixture("openrath_crashed.jsonl"))
	var ee *jsonl.ExistsError
	if !errors.As(err, &ee) || !errors.Is(err, jsonl.ErrExists) || ee.Session != "or-basic" {
		t.Fatalf("err = %v, want an *ExistsError for or-basic", err)
	}
	if rep.Imported() != 1 || !rep.Files[1].OK() || rep.Files[0].OK() {
		t.Fatalf("report = %+v", rep)
	}
	s, _ := rt.Session(ctx, "or-basic")
	if s.Len() != 5 {
		t.Fatalf("or-basic has %d chunks after a second import", s.Len())
	}
	if got := head(t, rt); got != before+3 {
		t.Fatalf("log grew by %d events, want 3 (the crashed file only)", got-before)
	}
}

func TestImport_DuplicateIDsInOneCall(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	rep, err := jsonl.Import(ctx, rt.Sessions(), fixture("openrath_crashed.jsonl"), fixture("openrath_crashed.jsonl"))
	if !errors.Is(err, jsonl.ErrExists) {
		t.Fatalf("err = %v", err)
	}
	if !rep.Files[0].OK() || rep.Files[1].OK() {
		t.Fatalf("the first file must win: %+v", rep)
	}
}

func TestImport_BadFileDoesNotStopOthers(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	rep, err := jsonl.Import(ctx, rt.Sessions(), fixture("bad_index_gap.jsonl"), fixture("missing.jsonl"), fixture("openrath_basic.jsonl"))
	if err == nil {
		t.Fatal("want an error")
	}
	if rep.Imported() != 1 || !rep.Files[2].OK() {
		t.Fatalf("report = %+v", rep)
	}
	if !errors.Is(rep.Files[1].Err, fs.ErrNotExist) {
		t.Fatalf("missing file error = %v", rep.Files[1].Err)
	}
}

func TestImport_AtomicWhenTheLastLineIsBad(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	good, err := os.ReadFile(fixture("openrath_basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Every line is fine except a broken one at the very end.
	bad := string(good) + `{"record_type":"chunk","index":5,"kind":"user","payload":{"content":` + "\n"
	before := head(t, rt)
	_, err = jsonl.ImportSources(ctx, rt.Sessions(), jsonl.Source{Name: "late.jsonl", Reader: strings.NewReader(bad)})
	var pe *jsonl.ParseError
	if !errors.As(err, &pe) || pe.Line != 8 || pe.File != "late.jsonl" {
		t.Fatalf("err = %v, want a parse error at late.jsonl:8", err)
	}
	if head(t, rt) != before {
		t.Fatal("a file with a bad last line was partly imported")
	}
	if _, err := rt.Session(ctx, "or-basic"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("session exists after a failed import: %v", err)
	}
}

func TestImport_CanceledContext(t *testing.T) {
	rt := MustOpen(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := jsonl.Import(ctx, rt.Sessions(), fixture("openrath_basic.jsonl"))
	if !errors.Is(err, context.Canceled) || rep.Files[0].OK() {
		t.Fatalf("err = %v report = %+v", err, rep)
	}
}
