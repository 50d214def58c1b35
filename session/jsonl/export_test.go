package jsonl_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
	"github.com/gorath/rath/session/jsonl"
)

// richSessions builds sessions with every role and lineage kind in rt and
// returns them.
func richSessions(t *testing.T, rt *rath.Runtime) []*session.Session {
	t.Helper()
	ctx := t.Context()
	must := func(s *session.Session, err error) *session.Session {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Made in a run: its ids derive from the run's seed.
	inRun := rt.Sessions().In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "round-trip"}})
	root := must(inRun.New(ctx, session.OriginAgentPrompt, events.Chunk{Role: events.RoleSystem, Content: "You review code. <be kind> & brief"}))
	root = must(root.Append(ctx,
		events.Chunk{Role: "user", Content: "Review main.go"},
		events.Chunk{Role: "assistant", Author: "root.reviewer", Meta: map[string]string{"model": "m1"},
			ToolCalls: []events.ToolCall{{ID: "c1", Name: "read_workspace_file", Arguments: `{"path":"main.go"}`}, {ID: "c2", Name: "ls", Arguments: ""}}},
		events.Chunk{Role: "tool_result", ToolCallID: "c1", Name: "read_workspace_file", Content: "package main\n\nfunc main() {}\n"},
		events.Chunk{Role: "tool_result", ToolCallID: "c2", Name: "ls", Content: ""},
		events.Chunk{Role: "summary", Content: "The file is empty.", Author: "root.compressor"},
		events.Chunk{Role: "memory", Content: "User prefers short reviews.", Meta: map[string]string{"namespace": "prefs"}},
	))
	root = must(root.To(ctx, "local", "/work/repo"))
	root = must(root.Emit(ctx, nil, events.ProviderCalled{Session: root.ID(), Model: "m1",
		Usage: events.Usage{PromptTokens: 40, CompletionTokens: 9, TotalTokens: 49}}))
	a := must(root.Fork(ctx))
	a = must(a.Append(ctx, events.Chunk{Role: "assistant", Content: "Looks fine.", Author: "root.a"}))
	b := must(root.Fork(ctx))
	b = must(b.Append(ctx, events.Chunk{Role: "assistant", Content: "Add tests.", Author: "root.b"}))
	merged := must(a.Merge(ctx, b))
	detached := must(root.Detach(ctx))
	return []*session.Session{root, a, b, merged, detached}
}

func export(t *testing.T, rt *rath.Runtime, id string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := jsonl.Export(t.Context(), rt.Sessions(), id, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestExport_RoundTrip(t *testing.T) {
	ctx := t.Context()
	src, dst := MustOpen(t), MustOpen(t)
	sessions := richSessions(t, src)
	files := map[string]string{}
	var srcs []jsonl.Source
	// Children first, to check the import orders them.
	for i := len(sessions) - 1; i >= 0; i-- {
		id := sessions[i].ID()
		files[id] = export(t, src, id)
		srcs = append(srcs, jsonl.Source{Name: id + ".jsonl", Reader: strings.NewReader(files[id])})
	}
	// The sessions' workspaces are under /work: accept placements there.
	rep, err := jsonl.ImportSourcesWith(ctx, dst.Sessions(), jsonl.Options{Placement: jsonl.UnderRoots("/work")}, srcs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range rep.Files {
		if fr.Format != jsonl.FormatExport || fr.Incomplete {
			t.Fatalf("report = %+v", fr)
		}
	}
	for _, s := range sessions {
		want, err := src.Session(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		got, err := dst.Session(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Chunks(), got.Chunks()); diff != "" {
			t.Fatalf("%s chunks (-want +got):\n%s", s.ID(), diff)
		}
		if diff := cmp.Diff(want.Parents(), got.Parents()); diff != "" {
			t.Fatalf("%s parents (-want +got):\n%s", s.ID(), diff)
		}
		if want.Placement() != got.Placement() || want.Usage() != got.Usage() {
			t.Fatalf("%s placement/usage %+v %+v, want %+v %+v", s.ID(), got.Placement(), got.Usage(), want.Placement(), want.Usage())
		}
		// Exporting the copy gives the same chunk and trailer records; the
		// header differs only in rath's bookkeeping (origin, version, source).
		again := strings.SplitN(export(t, dst, s.ID()), "\n", 2)
		orig := strings.SplitN(files[s.ID()], "\n", 2)
		if diff := cmp.Diff(orig[1], again[1]); diff != "" {
			t.Fatalf("%s re-export differs (-want +got):\n%s", s.ID(), diff)
		}
	}
	edgeKinds := func(rt *rath.Runtime) []string {
		es, err := rt.Reader().Edges(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Parent+"->"+e.Child+":"+e.Kind)
		}
		return out
	}
	if diff := cmp.Diff(edgeKinds(src), edgeKinds(dst), cmpSorted); diff != "" {
		t.Fatalf("graph edges (-want +got):\n%s", diff)
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func TestExport_Records(t *testing.T) {
	src := MustOpen(t)
	sessions := richSessions(t, src)
	text := export(t, src, sessions[0].ID())
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 1+sessions[0].Len()+1 {
		t.Fatalf("%d lines for %d chunks", len(lines), sessions[0].Len())
	}
	for _, want := range []string{`"record_type":"header"`, `"format":"rath-export"`, `"sandbox_backend":"local"`, `"parent_session_ids":[]`, `"lineage_kind":"root"`, `<be kind> & brief`} {
		if !strings.Contains(text, want) {
			t.Errorf("export lacks %s", want)
		}
	}
	// Summary and memory chunks are system chunks for OpenRath readers.
	if !strings.Contains(lines[6], `"kind":"system"`) || !strings.Contains(lines[6], `"role":"summary"`) {
		t.Errorf("summary chunk = %s", lines[6])
	}
	if !strings.Contains(lines[len(lines)-1], `"final_chunk_count":7`) || !strings.Contains(lines[len(lines)-1], `"total_tokens":49`) {
		t.Errorf("trailer = %s", lines[len(lines)-1])
	}
}

func TestExport_IncompleteStaysIncomplete(t *testing.T) {
	ctx := t.Context()
	a, b := MustOpen(t), MustOpen(t)
	if _, err := jsonl.Import(ctx, a.Sessions(), fixture("openrath_crashed.jsonl")); err != nil {
		t.Fatal(err)
	}
	rep, err := jsonl.ImportSources(ctx, b.Sessions(), jsonl.Source{Name: "x", Reader: strings.NewReader(export(t, a, "or-crashed"))})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Files[0].Incomplete {
		t.Fatal("an incomplete session became complete through export and import")
	}
}

func TestExport_UnknownSession(t *testing.T) {
	rt := MustOpen(t)
	var buf bytes.Buffer
	err := jsonl.Export(t.Context(), rt.Sessions(), "nope", &buf)
	if !errors.Is(err, session.ErrNotFound) || buf.Len() != 0 {
		t.Fatalf("err = %v, wrote %d bytes", err, buf.Len())
	}
}
