package dossier_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/replay"
)

func TestBuild_RealisticRun(t *testing.T) {
	f := mustFixture(t)
	d := f.d
	if d.Run.Status != "ok" || d.Run.Workflow != "team" || d.Run.FinishedSeq == 0 || d.Run.Events != len(d.Events) {
		t.Fatalf("run = %+v", d.Run)
	}
	if d.Run.StartedAt.IsZero() || d.Run.FinishedAt.Before(d.Run.StartedAt) {
		t.Fatalf("times = %v .. %v", d.Run.StartedAt, d.Run.FinishedAt)
	}
	if len(d.Warnings) != 0 {
		t.Fatalf("warnings on a sound log: %v", d.Warnings)
	}

	t.Run("SessionsAndGraph", func(t *testing.T) {
		kinds := map[string]int{}
		for _, s := range d.Sessions {
			kinds[s.Kind]++
			if !s.InRun {
				t.Errorf("session %s is context; the run touched every session of this store", s.ID)
			}
		}
		if got, want := fmt.Sprint(kinds), "map[compress:1 fork:2 merge:1 root:1]"; got != want {
			t.Fatalf("session kinds = %s, want %s", got, want)
		}
		var edges []string
		for _, e := range d.Graph.Edges {
			edges = append(edges, e.Label)
		}
		sort.Strings(edges)
		if got, want := fmt.Sprint(edges), "[compress fork fork merge #0 merge #1]"; got != want {
			t.Fatalf("edges = %s, want %s", got, want)
		}
		// The coder ran twice on the input session: a loop.
		in := sessionOf(t, d, d.Run.InputSession)
		if got, want := fmt.Sprint(in.Loops), "[{root.coder 2}]"; got != want {
			t.Fatalf("loops = %s, want %s", got, want)
		}
		if len(d.Graph.Nodes) != len(d.Sessions) {
			t.Fatalf("%d nodes for %d sessions", len(d.Graph.Nodes), len(d.Sessions))
		}
		layers := map[string]int{}
		for _, n := range d.Graph.Nodes {
			layers[n.Kind] = max(layers[n.Kind], n.Layer)
		}
		if layers["root"] != 0 || layers["fork"] != 1 || layers["merge"] != 2 || layers["compress"] != 3 {
			t.Fatalf("layers = %v", layers)
		}
		out := sessionOf(t, d, d.Run.OutputSession)
		if out.Kind != "compress" || out.Author != "root.squash" || len(out.Chunks) != 2 || out.Chunks[0].Role != events.RoleSummary {
			t.Fatalf("output session = %+v", out)
		}
	})

	t.Run("Transcript", func(t *testing.T) {
		in := sessionOf(t, d, d.Run.InputSession)
		if in.Chunks[0].New || !in.Chunks[1].New {
			t.Fatal("the user's chunk predates the run; the coder's are new")
		}
		var linked int
		for _, c := range in.Chunks {
			for _, a := range c.ToolAnchors {
				if a == "" {
					t.Errorf("chunk %d has an unlinked tool call", c.Index)
				}
				linked++
			}
		}
		if linked != 8 { // 4 calls from two assistant chunks, 4 results
			t.Fatalf("%d tool links, want 8", linked)
		}
		// A fork shares the input's chunks: stored there, not copied.
		for _, s := range d.Sessions {
			if s.Kind == "fork" && (s.Chunks[0].Home != in.ID || s.Chunks[len(s.Chunks)-1].Home != s.ID) {
				t.Fatalf("fork %s chunks homes = %q .. %q", s.ID, s.Chunks[0].Home, s.Chunks[len(s.Chunks)-1].Home)
			}
		}
	})

	t.Run("ToolCalls", func(t *testing.T) {
		var summary []string
		for _, tc := range d.Tools {
			summary = append(summary, fmt.Sprintf("%s:%v:%s:%d", tc.Tool, tc.OK(), tc.ErrorKind, len(tc.Files)))
		}
		if got, want := fmt.Sprint(summary), "[write_workspace_file:true::1 shout:true::0 write_workspace_file:true::1 nope:false:unknown_tool:0]"; got != want {
			t.Fatalf("tools = %s, want %s", got, want)
		}
		created, modified := d.Tools[0].Files[0], d.Tools[2].Files[0]
		if created.Status != dossier.FileCreated || created.Added != 2 || created.Removed != 0 {
			t.Fatalf("created = %+v", created)
		}
		if modified.Status != dossier.FileModified || modified.Added != 1 || modified.Removed != 0 {
			t.Fatalf("modified = %+v", modified)
		}
		if got, want := modified.Unified(), "--- a/hello.txt\n+++ b/hello.txt\n@@ -1,2 +1,3 @@\n hello\n+there\n world\n"; got != want {
			t.Fatalf("diff =\n%s\nwant\n%s", got, want)
		}
		if !strings.Contains(string(d.Tools[1].Output), "<script>") || d.Tools[1].Backend != "local" {
			t.Fatalf("shout = %+v", d.Tools[1])
		}
	})

	t.Run("ProviderCalls", func(t *testing.T) {
		var failed, withRequest, shared int
		for _, c := range d.Providers {
			if c.Failed {
				failed++
				if c.ErrorKind != "rate_limit" || !c.WillRetry || c.Agent != "root.coder" {
					t.Fatalf("failure = %+v", c)
				}
			}
			if c.Request != nil && len(c.Request.Messages) > 0 {
				withRequest++
			}
			if c.SharedPrefix > 0 {
				shared++
				if c.PrefixCall == "" || c.SharedPrefix > len(c.Request.Messages) {
					t.Fatalf("prefix of %d = %d (%s)", c.Seq, c.SharedPrefix, c.PrefixCall)
				}
			}
		}
		if failed != 1 || withRequest != len(d.Providers) || shared == 0 {
			t.Fatalf("%d calls: %d failed, %d with a request, %d sharing a prefix", len(d.Providers), failed, withRequest, shared)
		}
		var total int64
		for _, a := range d.Agents {
			total += a.Usage.TotalTokens
		}
		if total != d.Run.Usage.TotalTokens || total == 0 {
			t.Fatalf("agent usage sums to %d, run usage %d", total, d.Run.Usage.TotalTokens)
		}
	})

	t.Run("MemoryDecisionsWorkflows", func(t *testing.T) {
		types := map[string]int{}
		for _, m := range d.Memory {
			types[m.Type]++
			if m.Type == events.TypeMemoryRecalled && (len(m.Hits) != 1 || m.Hits[0].Text != "hello.txt must end with a newline") {
				t.Fatalf("recall = %+v", m)
			}
		}
		if types[events.TypeMemoryRecalled] != 1 || types[events.TypeMemoryCommitted] != 1 || types[events.TypeMemoryRemembered] == 0 {
			t.Fatalf("memory events = %v", types)
		}
		var chosen []string
		for _, x := range d.Decisions {
			chosen = append(chosen, x.Chosen)
		}
		if got, want := fmt.Sprint(chosen), "[coder coder ]"; got != want {
			t.Fatalf("decisions = %s, want %s", got, want)
		}
		for _, w := range d.Workflows {
			if w.ExitSeq <= w.EnterSeq || w.Output == "" {
				t.Fatalf("span %+v never closed", w)
			}
		}
		if d.Workflows[0].Path != "root" || d.Workflows[0].Output != d.Run.OutputSession {
			t.Fatalf("root span = %+v", d.Workflows[0])
		}
	})

	t.Run("Chain", func(t *testing.T) {
		head, err := f.rt.Store().Head(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		last := d.Events[len(d.Events)-1]
		if d.Chain.Head != head || d.Chain.Last.Seq != last.Seq || d.Chain.Last.Hash != last.Hash {
			t.Fatalf("chain = %+v, head %v, last %d", d.Chain, head, last.Seq)
		}
		if d.Chain.Verify == nil || !d.Chain.Verify.OK() || d.Chain.Verify.Events != head.Seq {
			t.Fatalf("verify = %+v", d.Chain.Verify)
		}
	})
}

func sessionOf(t *testing.T, d *dossier.Dossier, id string) *dossier.Session {
	t.Helper()
	for _, s := range d.Sessions {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no session %s in the dossier", id)
	return nil
}

func TestBuild_UnknownRun(t *testing.T) {
	rt := mustOpen(t)
	if _, err := dossier.Build(t.Context(), rt, "run-nope", dossier.Options{}); !errors.Is(err, dossier.ErrRunNotFound) {
		t.Fatalf("err = %v, want ErrRunNotFound", err)
	}
}

// A damaged log still gets a dossier that says what is missing.
func TestBuild_MissingBlobIsAWarning(t *testing.T) {
	ctx := t.Context()
	f := mustFixture(t)
	ref := f.d.Tools[2].Files[0].After
	err := f.rt.Store().Exclusive(ctx, func(ctx context.Context, tx *eventlog.Tx) error {
		_, err := tx.Exec(`DELETE FROM blobs WHERE hash = ?`, ref)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dossier.Build(ctx, f.rt, f.run, dossier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], ref) {
		t.Fatalf("warnings = %v", d.Warnings)
	}
	if note := d.Tools[2].Files[0].Note; !strings.Contains(note, "not recorded") {
		t.Fatalf("file note = %q", note)
	}
	html := render(t, d, "html")
	for _, want := range []string{"Warnings", ref, "content not recorded"} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML does not say %q", want)
		}
	}
}

func TestBuild_ReplayVerdictAndSkipVerify(t *testing.T) {
	ctx := t.Context()
	f := mustFixture(t)
	tests := []struct {
		name   string
		rep    *replay.Report
		html   []string
		md     string
		noHTML string
	}{
		{"not replayed", nil, []string{"not replayed", "rath replay run-dossier"}, "**Replay:** not replayed", "reproduced"},
		{"reproduced", &replay.Report{Run: f.run, Workflow: "team", Recorded: 59, Produced: 59, Matched: 59, Answered: 20},
			[]string{"reproduced", "59 of 59 events reproduced"}, "**Replay:** reproduced, 59 of 59 events", "not replayed"},
		{"diverged", &replay.Report{Run: f.run, Workflow: "team", Recorded: 59, Produced: 40, Matched: 12,
			Divergence: &replay.Divergence{Class: replay.ClassMismatch, Seq: 9, Type: "provider.called", Stream: "s-x", Version: 5,
				Hint: "prompt changed", Diff: "- <old>\n+ <new>"}},
			[]string{"diverged", "12 of 59 events reproduced", "prompt changed", "&lt;old&gt;", `href="#ev-9"`}, "diverged, 12 of 59 events reproduced", "not replayed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := dossier.Build(ctx, f.rt, f.run, dossier.Options{Replay: tt.rep, SkipVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			if d.Chain.Verify != nil {
				t.Fatal("verified although told to skip")
			}
			html := render(t, d, "html")
			for _, want := range tt.html {
				if !strings.Contains(html, want) {
					t.Errorf("HTML lacks %q", want)
				}
			}
			if verdict := between(t, html, `id="verdict-replay"`, "</div>"); strings.Contains(verdict, tt.noHTML) {
				t.Errorf("replay card says %q: %s", tt.noHTML, verdict)
			}
			if md := render(t, d, "md"); !strings.Contains(md, tt.md) {
				t.Errorf("Markdown lacks %q", tt.md)
			}
		})
	}
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("%q not found", from)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("%q not found after %q", to, from)
	}
	return s[i : i+j]
}

func TestRender_UnknownFormat(t *testing.T) {
	f := mustFixture(t)
	var sb strings.Builder
	if err := f.d.Render(&sb, "pdf"); !errors.Is(err, dossier.ErrFormat) || sb.Len() != 0 {
		t.Fatalf("err = %v, wrote %d bytes", err, sb.Len())
	}
}

// Two dossiers of the same store are the same bytes, in every format.
func TestRender_Deterministic(t *testing.T) {
	f := mustFixture(t)
	again, err := dossier.Build(t.Context(), f.rt, f.run, dossier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range dossier.Formats() {
		if a, b := render(t, f.d, format), render(t, again, format); a != b {
			t.Errorf("%s differs between two builds", format)
		}
	}
}

// sections are the HTML sections, in page order.
var sections = []string{"summary", "integrity", "graph", "sessions", "tools", "providers", "memory", "decisions", "workflows", "events"}

func TestHTML_EscapesLogText(t *testing.T) {
	f := mustFixture(t)
	html := render(t, f.d, "html")
	if strings.Contains(strings.ToLower(html), "<script") {
		t.Fatal("the page holds a <script> tag")
	}
	if strings.Contains(html, "ZgotmplZ") {
		t.Fatal("html/template rejected a value in an unsafe context (ZgotmplZ)")
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;script&gt;alert(2)&lt;/script&gt;", "HI &lt;B&gt;THERE&lt;/B&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("escaped text %q missing", want)
		}
	}
	last := -1
	for _, id := range sections {
		i := strings.Index(html, `<section id="`+id+`">`)
		if i < last {
			t.Fatalf("section %s missing or out of order", id)
		}
		last = i
	}
	for _, tc := range f.d.Tools {
		if !strings.Contains(html, `id="`+tc.Anchor+`"`) {
			t.Errorf("no anchor for tool call %s", tc.Anchor)
		}
	}
	for _, s := range f.d.Sessions {
		if !strings.Contains(html, `id="`+s.Anchor+`"`) || !strings.Contains(html, `href="#`+s.Anchor+`"`) {
			t.Errorf("session %s has no anchor or no link to it", s.ID)
		}
	}
}

// The page loads nothing: every link is a fragment, no element pulls a
// resource, and the only URLs are in escaped model and tool text.
func TestHTML_SelfContained(t *testing.T) {
	f := mustFixture(t)
	html := render(t, f.d, "html")
	for _, tag := range []string{"<link", "<img", "<iframe", "<object", "<embed", "<script", "<base", "@import", " src="} {
		if strings.Contains(strings.ToLower(html), tag) {
			t.Errorf("the page contains %q", tag)
		}
	}
	for _, attr := range []string{`href="`, `xlink:href="`, `action="`} {
		for rest := html; ; {
			i := strings.Index(rest, attr)
			if i < 0 {
				break
			}
			rest = rest[i+len(attr):]
			if !strings.HasPrefix(rest, "#") {
				t.Errorf("%s%.40s is not a fragment", attr, rest)
			}
		}
	}
	for rest := html; ; {
		i := strings.Index(rest, "url(")
		if i < 0 {
			break
		}
		rest = rest[i+4:]
		if !strings.HasPrefix(rest, "#") {
			t.Errorf("url(%.30s is not a fragment", rest)
		}
	}
	// Remove the escaped model and tool text; no URL may remain.
	stripped := strings.ReplaceAll(html, "see https://example.com/x", "")
	for _, scheme := range []string{"http://", "https://"} {
		if i := strings.Index(stripped, scheme); i >= 0 {
			t.Errorf("URL outside model text: %.60s", stripped[max(0, i-20):])
		}
	}
	if !strings.Contains(html, "https://example.com/x") {
		t.Fatal("the model's URL vanished: the check above proves nothing")
	}
}

func TestMarkdown_Structure(t *testing.T) {
	f := mustFixture(t)
	md := render(t, f.d, "md")
	var headings []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			headings = append(headings, strings.TrimPrefix(line, "## "))
		}
	}
	want := []string{"Verdict", "Session graph", "Sessions", "Tool calls", "Provider calls", "Memory", "Selector decisions", "Approvals and questions", "Scores", "Workflow paths", "Events"}
	if !slices.Equal(headings, want) {
		t.Fatalf("headings = %q, want %q", headings, want)
	}
	// Model text sits in fences; outside them no raw tag survives.
	outside, fenced := splitFences(t, md)
	if strings.Contains(outside, "<script") {
		t.Fatalf("a raw <script> outside code blocks:\n%s", outside)
	}
	if !strings.Contains(fenced, "<script>alert(1)</script>") {
		t.Fatal("the model text is not in a code block")
	}
	if !strings.Contains(outside, "done &lt;script&gt;alert(2)&lt;/script&gt;") {
		t.Fatal("the selector's reason is not entity-escaped in its table cell")
	}
	if !strings.Contains(fenced, "@@ -1,2 +1,3 @@\n hello\n+there\n world\n") {
		t.Fatal("the file diff is missing")
	}
	if got := strings.Count(between(t, md, "```mermaid", "\n```\n"), "[\""); got != len(f.d.Sessions) {
		t.Fatalf("mermaid has %d nodes for %d sessions", got, len(f.d.Sessions))
	}
	for _, e := range f.d.Events {
		if !strings.Contains(md, fmt.Sprintf("\n| %d | ", e.Seq)) {
			t.Fatalf("event %d missing from the index", e.Seq)
		}
	}
}

// splitFences separates text outside fenced code blocks from text inside
// them, following CommonMark: a fence closes on a line of at least as
// many backticks.
func splitFences(t *testing.T, md string) (outside, inside string) {
	t.Helper()
	var out, in strings.Builder
	open := ""
	for _, line := range strings.SplitAfter(md, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		ticks := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
		switch {
		case open == "" && ticks >= 3:
			open = trimmed[:ticks]
		case open != "" && ticks >= len(open) && strings.TrimLeft(trimmed, "`") == "":
			open = ""
		case open != "":
			in.WriteString(line)
		default:
			out.WriteString(line)
		}
	}
	if open != "" {
		t.Fatal("an unclosed code fence")
	}
	return out.String(), in.String()
}

func TestJSONL_Structure(t *testing.T) {
	f := mustFixture(t)
	lines := strings.Split(strings.TrimSuffix(render(t, f.d, "jsonl"), "\n"), "\n")
	var head struct {
		Kind     string         `json:"kind"`
		Format   string         `json:"format"`
		Run      dossier.Run    `json:"run"`
		Counts   map[string]int `json:"counts"`
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
		Chain dossier.Chain `json:"chain"`
	}
	mustJSON(t, lines[0], &head)
	if head.Kind != "dossier" || head.Format != dossier.JSONLFormat || head.Run.ID != f.run || len(head.Sessions) != len(f.d.Sessions) {
		t.Fatalf("header = %+v", head)
	}
	if head.Counts["events"] != len(lines)-1 || head.Chain.Verify == nil || !head.Chain.Verify.OK() {
		t.Fatalf("header counts %v for %d event lines, verify %+v", head.Counts, len(lines)-1, head.Chain.Verify)
	}
	var prev int64
	var sawDiff, sawRequest bool
	for _, line := range lines[1:] {
		var ev struct {
			Kind    string                     `json:"kind"`
			Seq     int64                      `json:"seq"`
			Type    string                     `json:"type"`
			Hash    string                     `json:"hash"`
			RunID   string                     `json:"run_id"`
			Payload map[string]any             `json:"payload"`
			Blobs   map[string]json.RawMessage `json:"blobs"`
		}
		mustJSON(t, line, &ev)
		if ev.Kind != "event" || ev.Seq <= prev || ev.RunID != f.run || ev.Hash == "" {
			t.Fatalf("event line = %s", line)
		}
		prev = ev.Seq
		if strings.Contains(line, "<script") {
			t.Fatalf("raw <script> in JSON: %s", line)
		}
		switch ev.Type {
		case events.TypeToolReturned:
			for ref, raw := range ev.Blobs {
				var b struct {
					Size int    `json:"size"`
					Text string `json:"text"`
				}
				mustJSON(t, string(raw), &b)
				if b.Size != len(b.Text) {
					t.Fatalf("blob %s: size %d, %d bytes inline", ref, b.Size, len(b.Text))
				}
				if b.Text == "hello\nthere\nworld\n" {
					sawDiff = true
				}
			}
		case events.TypeProviderCalled:
			// The request record, its message segment and the response.
			if len(ev.Blobs) != 3 {
				t.Fatalf("provider.called seq %d carries %d blobs, want 3", ev.Seq, len(ev.Blobs))
			}
			sawRequest = true
		}
	}
	if !sawDiff || !sawRequest {
		t.Fatalf("file content inline %v, request blobs %v", sawDiff, sawRequest)
	}
}

func TestJSONL_InlineBlobLimit(t *testing.T) {
	f := mustFixture(t)
	d, err := dossier.Build(t.Context(), f.rt, f.run, dossier.Options{InlineBlobLimit: -1, SkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(render(t, d, "jsonl"), "\n"), "\n")
	var omitted int
	for _, line := range lines[1:] {
		var ev struct {
			Blobs map[string]map[string]any `json:"blobs"`
		}
		mustJSON(t, line, &ev)
		for ref, b := range ev.Blobs {
			if b["text"] != nil || b["base64"] != nil || b["omitted"] != "larger than 0 bytes" {
				t.Fatalf("blob %s inlined although the limit forbids it: %v", ref, b)
			}
			omitted++
		}
	}
	if omitted == 0 {
		t.Fatal("no blob references at all: the check proves nothing")
	}
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v in %.200s", err, s)
	}
}
