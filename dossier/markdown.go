package dossier

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gorath/rath/internal/textsafe"
)

// Markdown writes the dossier as CommonMark (GitHub flavoured tables and
// a Mermaid block for the graph). Model and tool text goes in fenced code
// blocks, longer than any backtick run inside, so no renderer reads it as
// markup; short inline fields are entity-escaped. Provider requests are
// summarized (message count, tools, the last message), not listed: the
// HTML and JSONL carry them whole.
func (d *Dossier) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	m := &mdWriter{w: bw, d: d, limit: d.opts.textLimit()}
	m.header()
	m.verdict()
	m.graph()
	m.sessions()
	m.tools()
	m.providers()
	m.memory()
	m.decisions()
	m.approvals()
	m.scores()
	m.workflows()
	m.events()
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dossier: markdown: %w", err)
	}
	return nil
}

type mdWriter struct {
	w     *bufio.Writer
	d     *Dossier
	limit int
}

// p writes with controls and bidi characters escaped (textsafe.Terminal):
// log text must not reorder the lines a reader sees.
func (m *mdWriter) p(format string, args ...any) {
	m.w.WriteString(textsafe.Terminal(fmt.Sprintf(format, args...)))
}

// inline escapes text for a Markdown paragraph or table cell: HTML
// specials become entities, Markdown punctuation is backslash-escaped,
// and line breaks become spaces.
func inline(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// code is inline text shown as code: escaped like inline, in a <code>
// element, since a backtick span cannot hold every text safely in a table.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "<code>" + inline(s) + "</code>"
}

// fence returns a backtick fence longer than any run of backticks in s.
func fence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// block writes text in a fenced code block, cut to the limit.
func (m *mdWriter) block(lang, text string) {
	text, note := clip(text, m.limit)
	f := fence(text)
	m.p("%s%s\n%s", f, lang, text)
	if !strings.HasSuffix(text, "\n") {
		m.p("\n")
	}
	m.p("%s\n", f)
	if note != "" {
		m.p("\n_%s_\n", inline(note))
	}
	m.p("\n")
}

func (m *mdWriter) header() {
	r := m.d.Run
	m.p("# Evidence dossier: run %s\n\n", code(r.ID))
	m.p("| field | value |\n|---|---|\n")
	row := func(k, v string) { m.p("| %s | %s |\n", k, v) }
	row("workflow", inline(r.Workflow))
	status := inline(r.Status)
	if r.Error != "" {
		status += ": " + inline(r.Error)
	}
	row("status", status)
	row("input session", code(r.InputSession))
	row("output session", code(r.OutputSession))
	row("seed", code(r.Seed))
	row("code version", code(r.CodeVersion))
	if r.ParentRun != "" {
		row("parent run", code(r.ParentRun))
	}
	for _, k := range sortedKeys(r.Params) {
		row("param "+inline(k), code(r.Params[k]))
	}
	row("started", fmt.Sprintf("%s (seq %d)", formatTime(r.StartedAt), r.StartedSeq))
	if r.FinishedSeq > 0 {
		row("finished", fmt.Sprintf("%s (seq %d)", formatTime(r.FinishedAt), r.FinishedSeq))
	} else {
		row("finished", "never: the run did not finish")
	}
	row("events", fmt.Sprint(r.Events))
	row("usage", formatUsage(r.Usage))
	m.p("\n")
	if len(m.d.Agents) > 0 {
		m.p("| agent | calls | failed | prompt | completion | total | latency ms |\n|---|--:|--:|--:|--:|--:|--:|\n")
		for _, a := range m.d.Agents {
			m.p("| %s | %d | %d | %d | %d | %d | %d |\n", code(a.Agent), a.Calls, a.Failures, a.Usage.PromptTokens,
				a.Usage.CompletionTokens, a.Usage.TotalTokens, a.LatencyMS)
		}
		m.p("\n")
	}
}

func (m *mdWriter) verdict() {
	d := m.d
	m.p("## Verdict\n\n")
	switch rep := d.Replay; {
	case rep == nil:
		m.p("- **Replay:** not replayed (`rath replay %s`)\n", inline(d.Run.ID))
	case rep.OK():
		m.p("- **Replay:** reproduced, %d of %d events, %d answers from the record (%s)\n", rep.Matched, rep.Recorded, rep.Answered, inline(rep.Verdict()))
		for _, n := range rep.Notes {
			m.p("- **Replay note:** %s\n", inline(n))
		}
	default:
		dv := rep.Divergence
		m.p("- **Replay:** diverged, %d of %d events reproduced; first divergence: %s at seq %d (%s on %s v%d): %s\n",
			rep.Matched, rep.Recorded, inline(dv.Class), dv.Seq, inline(dv.Type), code(dv.Stream), dv.Version, inline(dv.Hint))
	}
	switch v := d.Chain.Verify; {
	case v == nil:
		m.p("- **Verified:** nothing (verification skipped)\n")
	case v.OK():
		m.p("- **Verified:** %s\n", d.Chain.Verified())
	default:
		m.p("- **Verification FAILED:** %s (what follows may not match the log)\n", inline(v.Failure.Error()))
	}
	m.p("- **Chain head:** `%d:%s`\n", d.Chain.Head.Seq, d.Chain.Head.Hash)
	m.p("- **Run events:** first `%d:%s`, last `%d:%s`\n", d.Chain.First.Seq, d.Chain.First.Hash, d.Chain.Last.Seq, d.Chain.Last.Hash)
	if at := d.Attestation; at != nil {
		m.p("- **Attested:** signed by %s (key `%s`, %s), witnessed by %s; checkpoint %s size %d; replay: %s\n",
			inline(at.SignedBy), at.KeyID, at.LogKey(), inline(at.Witnesses()), inline(at.Origin), at.Size, inline(at.Replay))
	}
	m.p("\n")
	if rep := d.Replay; rep != nil && rep.Divergence != nil && rep.Divergence.Diff != "" {
		m.block("text", rep.Divergence.Diff)
	}
	if len(d.Warnings) > 0 {
		m.p("### Warnings\n\n")
		for _, w := range d.Warnings {
			m.p("- %s\n", inline(w))
		}
		m.p("\n")
	}
}

// mermaidLabel keeps a label inside a quoted Mermaid string.
func mermaidLabel(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ", "`", "#96;").Replace(s)
}

func (m *mdWriter) graph() {
	g := m.d.Graph
	m.p("## Session graph\n\n")
	key := map[string]string{}
	m.p("```mermaid\ngraph TD\n")
	for i, n := range g.Nodes {
		key[n.Session] = fmt.Sprintf("n%d", i)
		label := mermaidLabel(n.Session) + "<br/>" + mermaidLabel(n.Kind+" · "+n.Author)
		if n.Loop != "" {
			label += "<br/>" + mermaidLabel(n.Loop)
		}
		shape := "[\"%s\"]"
		if n.Context {
			shape = "([\"%s\"])"
		}
		m.p("  %s"+shape+"\n", key[n.Session], label)
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Dashed {
			arrow = "-.->"
		}
		m.p("  %s %s|%s| %s\n", key[e.From], arrow, mermaidLabel(e.Label), key[e.To])
	}
	m.p("```\n\n")
	m.p("| parent | child | edge |\n|---|---|---|\n")
	for _, e := range g.Edges {
		m.p("| %s | %s | %s |\n", code(e.From), code(e.To), inline(e.Label))
	}
	m.p("\n")
}

func (m *mdWriter) sessions() {
	d := m.d
	m.p("## Sessions\n\n")
	for _, s := range d.Sessions {
		m.p("### Session %s\n\n", code(s.ID))
		m.p("- kind: %s", inline(s.Kind))
		if s.Origin != "" {
			m.p(" (%s)", inline(s.Origin))
		}
		m.p("; author: %s\n", code(s.Author))
		if len(s.Parents) > 0 {
			ps := make([]string, len(s.Parents))
			for i, p := range s.Parents {
				ps[i] = code(p)
			}
			m.p("- parents: %s\n", strings.Join(ps, ", "))
		}
		if s.Kind == "detach" && s.Source != "" {
			m.p("- detached from %s\n", code(s.Source))
		}
		if s.Placement.Backend != "" {
			m.p("- placement: %s %s\n", inline(s.Placement.Backend), code(s.Placement.Spec))
		}
		m.p("- usage: %s, %d calls\n", formatUsage(s.Usage), s.Usage.Calls)
		for _, l := range s.Loops {
			m.p("- loop: %s entered %d times\n", code(l.Path), l.Count)
		}
		if !s.InRun {
			m.p("- not touched by this run (context: the lineage parent of a session it touched)\n\n")
			continue
		}
		m.p("\n")
		for _, bl := range d.blocks(s) {
			if bl.Chunk == nil {
				m.p("_chunks #%d–#%d are shared with %s (its #%d–#%d)_\n\n", bl.From, bl.To, code(bl.Home), bl.HomeFrom, bl.HomeTo)
				continue
			}
			c := bl.Chunk
			m.p("**#%d %s**", c.Index, inline(c.Role))
			if c.Author != "" {
				m.p(" by %s", code(c.Author))
			}
			if c.ToolCallID != "" {
				m.p(", result of %s", code(c.ToolCallID))
			}
			if c.Home != s.ID {
				m.p(", stored in %s", code(c.Home))
			}
			if c.New {
				m.p(" _(this run)_")
			}
			m.p("\n\n")
			if c.Content != "" {
				m.block("text", c.Content)
			}
			for _, tc := range c.ToolCalls {
				m.p("- calls %s with %s\n", code(tc.Name), code(tc.Arguments))
			}
			if len(c.ToolCalls) > 0 {
				m.p("\n")
			}
		}
	}
}

func (m *mdWriter) tools() {
	m.p("## Tool calls\n\n")
	if len(m.d.Tools) == 0 {
		m.p("No tool calls.\n\n")
	}
	for _, t := range m.d.Tools {
		status := "ok"
		switch {
		case !t.Returned:
			status = "never returned"
		case t.ErrorKind != "":
			status = "error " + t.ErrorKind
		case t.IsError:
			status = "failed"
		}
		m.p("### Tool call %s (seq %d): %s\n\n", code(t.Tool), t.Seq, inline(status))
		m.p("- call id %s in session %s", code(t.CallID), code(t.Session))
		if t.Agent != "" {
			m.p(" by %s", code(t.Agent))
		}
		m.p("\n- sandbox: %s %s, %d ms", inline(t.Backend), code(t.SandboxID), t.DurationMS)
		if t.ExitCode != nil {
			m.p(", exit code %d", *t.ExitCode)
		}
		m.p("\n")
		if t.Error != "" {
			m.p("- error: %s\n", inline(t.Error))
		}
		m.p("\nArguments:\n\n")
		m.block("json", prettyJSON(t.Arguments))
		if t.Returned {
			m.p("Output (%d bytes):\n\n", t.OutputSize)
			switch {
			case t.Output == nil && t.OutputSize > 0:
				m.p("_content missing from the store_\n\n")
			case isBinary(t.Output):
				m.p("_binary, %d bytes_\n\n", len(t.Output))
			default:
				m.block("text", string(t.Output))
			}
		}
		for _, f := range t.Files {
			m.p("File %s %s (+%d −%d):\n\n", code(f.Path), inline(f.Status), f.Added, f.Removed)
			if f.Note != "" {
				m.p("_%s_\n\n", inline(f.Note))
				continue
			}
			lines := m.d.diffLines(f)
			short := f
			short.Lines = lines
			m.block("diff", short.Unified())
		}
	}
}

func (m *mdWriter) providers() {
	m.p("## Provider calls\n\n")
	if len(m.d.Providers) == 0 {
		m.p("No provider calls.\n\n")
		return
	}
	m.p("| seq | agent | session | model | attempt | status | prompt | completion | total | latency ms |\n|--:|---|---|---|--:|---|--:|--:|--:|--:|\n")
	for _, c := range m.d.Providers {
		status := "ok"
		if c.Failed {
			status = "failed: " + c.ErrorKind
			if c.WillRetry {
				status += ", retried"
			}
		}
		m.p("| %d | %s | %s | %s | %d | %s | %d | %d | %d | %d |\n", c.Seq, code(c.Agent), code(short(c.Session)), inline(c.Model),
			c.Attempt, inline(status), c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens, c.LatencyMS)
	}
	m.p("\n")
	for _, c := range m.d.Providers {
		m.p("### Provider call seq %d (%s)\n\n", c.Seq, code(c.Agent))
		if c.Failed {
			m.p("- error: %s\n", inline(c.Error))
		}
		if r := c.Request; r != nil {
			var tools []string
			for _, t := range r.Tools {
				tools = append(tools, code(t.Name))
			}
			m.p("- request: %d messages", len(r.Messages))
			if len(tools) > 0 {
				m.p(", tools %s", strings.Join(tools, ", "))
			}
			if r.ToolChoice != "" {
				m.p(", must call %s", code(r.ToolChoice))
			}
			m.p(", digest %s\n", code(c.Digest))
			if n := len(r.Messages); n > 0 {
				last := r.Messages[n-1]
				m.p("- last message (%s):\n\n", inline(last.Role))
				m.block("text", last.Content)
			}
		}
		if r := c.Response; r != nil {
			m.p("Response:\n\n")
			if r.Content != "" {
				m.block("text", r.Content)
			}
			for _, tc := range r.ToolCalls {
				m.p("- calls %s with %s\n", code(tc.Name), code(tc.Arguments))
			}
		}
		m.p("\n")
	}
}

func (m *mdWriter) memory() {
	m.p("## Memory\n\n")
	if len(m.d.Memory) == 0 {
		m.p("No memory writes or recalls.\n\n")
	}
	for _, e := range m.d.Memory {
		m.p("- seq %d %s in %s", e.Seq, inline(e.Type), code(e.Namespace))
		if e.ID != "" {
			m.p(", id %s", code(e.ID))
		}
		if e.Agent != "" {
			m.p(", by %s", code(e.Agent))
		}
		if e.Session != "" {
			m.p(", session %s", code(e.Session))
		}
		if len(e.IDs) > 0 {
			ids := make([]string, len(e.IDs))
			for i, id := range e.IDs {
				ids[i] = code(id)
			}
			m.p(", memories %s", strings.Join(ids, ", "))
		}
		m.p("\n\n")
		if e.Text != "" {
			m.block("text", e.Text)
		}
		if e.Query != "" {
			m.p("  query (k=%d, %d hits):\n\n", e.K, len(e.Hits))
			m.block("text", e.Query)
			for _, h := range e.Hits {
				m.p("  - %s score %.3f: %s\n", code(h.ID), h.Score, inline(oneLine(h.Text, 200)))
			}
			m.p("\n")
		}
	}
}

func (m *mdWriter) decisions() {
	m.p("## Selector decisions\n\n")
	if len(m.d.Decisions) == 0 {
		m.p("No selector decisions.\n\n")
		return
	}
	m.p("| seq | selector | session | candidates | chosen | attempts | reason |\n|--:|---|---|---|---|--:|---|\n")
	for _, x := range m.d.Decisions {
		chosen := x.Chosen
		if chosen == "" {
			chosen = "none"
		}
		m.p("| %d | %s | %s | %s | **%s** | %d | %s |\n", x.Seq, code(x.Path), code(short(x.Session)),
			inline(strings.Join(x.Candidates, ", ")), inline(chosen), x.Attempts, inline(x.Reason))
	}
	m.p("\n")
}

func (m *mdWriter) approvals() {
	m.p("## Approvals and questions\n\n")
	if len(m.d.Approvals) == 0 {
		m.p("No approvals or questions.\n\n")
		return
	}
	m.p("| seq | request | asked by | what | why | decision | decided |\n|--:|---|---|---|---|---|---|\n")
	for _, a := range m.d.Approvals {
		decided := "-"
		if !a.DecidedAt.IsZero() {
			decided = a.DecidedAt.Format(time.RFC3339)
			if a.DecidedSeq > 0 {
				decided = fmt.Sprintf("seq %d, %s", a.DecidedSeq, decided)
			}
		}
		m.p("| %d | %s | %s | %s | %s | **%s** | %s |\n", a.RequestedSeq, code(a.ID), code(agentOr(a.Agent)), inline(warned(a.Shown.Warning, a.What())),
			inline(a.Shown.Reason), inline(a.Outcome()), decided)
	}
	m.p("\n")
}

func (m *mdWriter) scores() {
	m.p("## Scores\n\n")
	if len(m.d.Scores) == 0 {
		m.p("No scores.\n\n")
		return
	}
	m.p("| seq | experiment | item | scorer | value | reason | read |\n|--:|---|---|---|--:|---|---|\n")
	for _, s := range m.d.Scores {
		m.p("| %d | %s | %s | %s | %g | %s | %s |\n", s.Seq, code(s.Experiment), code(s.Item), code(s.Scorer+" v"+s.ScorerVersion),
			s.Value, inline(s.Reason), inline(seqList(s.Reads)))
	}
	m.p("\n")
}

// seqList is seqs as "seq 4, 9".
func seqList(seqs []int64) string {
	if len(seqs) == 0 {
		return "-"
	}
	out := "seq"
	for i, s := range seqs {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf(" %d", s)
	}
	return out
}

// warned is text with its warning, if any, in front.
func warned(warning, s string) string {
	if warning == "" {
		return s
	}
	return "WARNING: " + warning + ": " + s
}

func (m *mdWriter) workflows() {
	m.p("## Workflow paths\n\n")
	if len(m.d.Workflows) == 0 {
		m.p("No workflow spans.\n\n")
		return
	}
	for _, w := range m.d.Workflows {
		m.p("%s- %s (%s) seq %d–", strings.Repeat("  ", w.Depth), code(w.Path), inline(w.Workflow), w.EnterSeq)
		if w.ExitSeq > 0 {
			m.p("%d", w.ExitSeq)
		} else {
			m.p("(open)")
		}
		m.p(": %s", code(short(w.Session)))
		if w.Output != "" {
			m.p(" → %s", code(short(w.Output)))
		}
		if w.Error != "" {
			m.p(", error: %s", inline(w.Error))
		}
		m.p("\n")
	}
	m.p("\n")
}

func (m *mdWriter) events() {
	m.p("## Events\n\n| seq | at | stream | v | type | summary | hash |\n|--:|---|---|--:|---|---|---|\n")
	for _, e := range m.d.Events {
		m.p("| %d | %s | %s | %d | %s | %s | %s |\n", e.Seq, formatTime(e.At), code(shortStream(e.Stream)), e.Version,
			inline(e.Type), inline(e.Summary), code(short(e.Hash)))
	}
	m.p("\n")
}
