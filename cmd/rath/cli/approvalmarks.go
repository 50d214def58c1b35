package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/textsafe"
)

// approvalMark is a request on a session and its decision, as show marks
// it in the transcript.
type approvalMark struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	CallID   string `json:"call_id,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Question string `json:"question,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Status   string `json:"status"` // pending, approved, rejected, answered
	By       string `json:"by,omitempty"`
	Note     string `json:"note,omitempty"`
	Edited   string `json:"edited_arguments,omitempty"`
	Answer   string `json:"answer,omitempty"`
}

func approvalMarks(ctx context.Context, rt *rath.Runtime, session string) ([]approvalMark, error) {
	rows, err := rt.Reader().SessionApprovals(ctx, session)
	if err != nil {
		return nil, err
	}
	var out []approvalMark
	for _, r := range rows {
		st, err := approval.Load(ctx, rt.Store(), r.ID)
		if err != nil {
			return nil, err
		}
		q := st.Request
		m := approvalMark{ID: q.ID, Kind: q.Kind, CallID: q.CallID, Tool: q.Tool, Question: q.Question, Reason: q.Reason, Status: "pending"}
		if d := st.Decision; d != nil {
			m.Status, m.By, m.Note, m.Edited, m.Answer = d.Decision, d.By, d.Note, d.EditedArguments, d.Answer
		}
		out = append(out, m)
	}
	return out, nil
}

// line is the mark as one transcript line, what a model or a person
// wrote in it escaped (textsafe).
func (m approvalMark) line() string {
	esc := func(s string) string { e, _ := textsafe.Escape(s); return e }
	m.Question, m.Note, m.Edited, m.Answer, m.By = esc(m.Question), esc(m.Note), esc(m.Edited), esc(m.Answer), esc(m.By)
	what := "approval"
	if m.Kind == events.ApprovalQuestion {
		what = "question \"" + m.Question + "\""
	}
	s := fmt.Sprintf("[%s %s: %s", what, m.ID, m.Status)
	if m.By != "" {
		s += " by " + m.By
	}
	if m.Note != "" {
		s += ": " + m.Note
	}
	if m.Edited != "" {
		s += "; ran with edited arguments " + m.Edited
	}
	if m.Answer != "" {
		s += "; answer " + m.Answer
	}
	return s + "]"
}

// printCall prints a tool call. A call a person was asked about shows its
// arguments as the approver saw them: one field a line, in full, escaped,
// flagged when anything was; any other call's arguments are one line,
// escaped all the same.
func printCall(w io.Writer, id, name, args string, marks []approvalMark) {
	asked := false
	for _, m := range marks {
		asked = asked || m.CallID == id && id != ""
	}
	if !asked {
		shown, _ := textsafe.Escape(args)
		fmt.Fprintf(w, "    -> call %s %s %s\n", id, name, shown)
		return
	}
	fmt.Fprintf(w, "    -> call %s %s\n", id, name)
	fields, hidden := textsafe.Fields([]byte(args))
	if hidden {
		fmt.Fprintf(w, "       WARNING: %s\n", textsafe.Warning)
	}
	for _, f := range fields {
		if f.Name == "" {
			f.Name = "arguments"
		}
		pad := strings.Repeat(" ", len(f.Name)+9)
		fmt.Fprintf(w, "       %s: %s\n", f.Name, strings.ReplaceAll(f.Value, "\n", "\n"+pad))
	}
}

// printMarks prints the marks of call callID ("": the questions asked
// outside a tool call).
func printMarks(w io.Writer, marks []approvalMark, callID string) {
	for _, m := range marks {
		if m.CallID == callID {
			fmt.Fprintf(w, "       %s\n", m.line())
		}
	}
}
