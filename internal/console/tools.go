package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/textsafe"
)

// Tool call states, as ToolCallView.State says them.
const (
	ToolOK       = "ok"       // returned without an error
	ToolError    = "error"    // returned an error (or a non-zero exit)
	ToolWaiting  = "waiting"  // waits for a person's approval
	ToolRejected = "rejected" // a person rejected it; it never ran
	ToolOpen     = "open"     // called, not returned: running, or the run crashed
)

// tailLines and tailBytes bound the output tail a tool call shows: enough
// for a compiler's last error, not a whole log.
const (
	tailLines = 12
	tailBytes = 2048
)

// ToolCallView is one tool call as the run page shows it: the dossier's
// record plus its state, the approval it waits on, its arguments one
// field at a time and the tail of its output (stderr when the output has
// a stderr section), all escaped.
type ToolCallView struct {
	*dossier.ToolCall
	State string `json:"state"`
	// Approval is the request the call waits on (or was decided by).
	Approval *ToolApproval `json:"approval,omitempty"`
	// Fields are the arguments one field at a time, escaped.
	Fields []textsafe.Field `json:"fields,omitempty"`
	// Tail is the end of the output; TailOf names what it is the end of
	// (stderr, or output).
	Tail   string `json:"tail,omitempty"`
	TailOf string `json:"tail_of,omitempty"`
	// Warning is set when arguments or tail held characters that do not
	// draw as themselves (shown escaped).
	Warning string `json:"warning,omitempty"`
	// ElapsedMS is the call's time as the trace's span (the waterfall's
	// bar) has it: the tool's own measure (DurationMS, whole milliseconds)
	// when there is one, else the time from its tool.called to its
	// tool.returned.
	ElapsedMS float64 `json:"elapsed_ms,omitempty"`
}

// ToolApproval is the approval request of a tool call.
type ToolApproval struct {
	ID     string `json:"id"`
	Status string `json:"status"` // pending, approved, rejected
	By     string `json:"by,omitempty"`
	Note   string `json:"note,omitempty"`
	Edited bool   `json:"edited,omitempty"`
}

// ToolsView is GET /api/runs/{id}/tools: the run's tool calls with their
// arguments, outcome and the files each changed, as line diffs (the
// dossier's tool section).
type ToolsView struct {
	Tools []ToolCallView `json:"tools"`
}

func (s *Server) apiRunTools(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := s.reader(ctx).Run(ctx, id); notFound(w, err) {
		return
	}
	s.heavy.Lock()
	d, err := dossier.Build(ctx, s.rt, id, dossier.Options{SkipVerify: true})
	s.heavy.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "tools: %v", err)
		return
	}
	v := toolsOf(d)
	evs, err := s.rt.Store().ReadRun(ctx, id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "tools: %v", err)
		return
	}
	at := make(map[int64]time.Time, len(evs))
	for _, ev := range evs {
		if ev.Type == events.TypeToolCalled || ev.Type == events.TypeToolReturned {
			at[ev.Seq] = ev.At
		}
	}
	for i := range v.Tools {
		t := &v.Tools[i]
		from, to := at[t.Seq], at[t.ReturnSeq]
		if !t.Returned || from.IsZero() || to.IsZero() {
			continue
		}
		// The span's rule (telemetry): the measured duration, unless it
		// is unknown (0) or would end after the record.
		wall := to.Sub(from)
		if d := time.Duration(t.DurationMS) * time.Millisecond; d > 0 && d <= wall {
			wall = d
		}
		t.ElapsedMS = float64(wall.Microseconds()) / 1000
	}
	if len(v.Tools) > 0 && !s.viewed(w, r, access.Viewed{Run: id, What: events.ViewedToolResult}) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// toolsOf pairs each tool call with the approval of its call id (the last
// one: a call is asked about once) and works out its state.
func toolsOf(d *dossier.Dossier) ToolsView {
	type key struct{ session, call string }
	asked := map[key]*dossier.Approval{}
	for i := range d.Approvals {
		a := &d.Approvals[i]
		if a.CallID != "" {
			asked[key{a.Session, a.CallID}] = a
		}
	}
	v := ToolsView{Tools: []ToolCallView{}}
	for _, t := range d.Tools {
		tv := ToolCallView{ToolCall: t}
		if a := asked[key{t.Session, t.CallID}]; a != nil {
			tv.Approval = &ToolApproval{ID: a.ID, Status: a.Status, By: a.By, Note: a.Note, Edited: a.EditedArguments != ""}
		}
		switch {
		case t.Returned && t.OK():
			tv.State = ToolOK
		case t.Returned && tv.Approval != nil && tv.Approval.Status == "rejected":
			tv.State = ToolRejected
		case t.Returned:
			tv.State = ToolError
		case tv.Approval != nil && tv.Approval.Status == "pending":
			tv.State = ToolWaiting
		default:
			tv.State = ToolOpen
		}
		fs, h1 := textsafe.Fields([]byte(t.Arguments))
		tv.Fields = fs
		var h2 bool
		if t.Returned && !t.OK() {
			tv.Tail, tv.TailOf = tail(string(t.Output))
			tv.Tail, h2 = textsafe.Escape(tv.Tail)
		}
		if h1 || h2 {
			tv.Warning = textsafe.Warning
		}
		v.Tools = append(v.Tools, tv)
	}
	return v
}

// stderrMark opens the stderr section of a command's result as the
// built-in tools write it (exit code, stdout:, stderr:).
const stderrMark = "\nstderr:\n"

// tail is the last lines of a failed call's output: of its stderr section
// when it has one, else of the whole output.
func tail(out string) (text, of string) {
	of = "output"
	if i := strings.LastIndex(out, stderrMark); i >= 0 {
		out, of = out[i+len(stderrMark):], "stderr"
	}
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return "", ""
	}
	lines := strings.Split(out, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	text = strings.Join(lines, "\n")
	if len(text) > tailBytes {
		text = strings.ToValidUTF8(text[len(text)-tailBytes:], "")
	}
	return text, of
}
