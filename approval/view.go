package approval

import (
	"encoding/json"
	"time"

	"github.com/gorath/rath/internal/textsafe"
)

// View is a pending request as people read it: what `rath approvals
// --json` prints and the console's inbox shows. Arguments, reason and
// question come from a model: whoever prints them escapes them.
type View struct {
	ID        string          `json:"id"`
	Run       string          `json:"run,omitempty"`
	Session   string          `json:"session"`
	Agent     string          `json:"agent,omitempty"`
	Kind      string          `json:"kind"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Question  string          `json:"question,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Requested time.Time       `json:"requested_at"`
	Deadline  *time.Time      `json:"deadline,omitempty"`
	Default   string          `json:"default,omitempty"`
	Expired   bool            `json:"expired,omitempty"`
	// Shown is the request as a person must see it to decide on it.
	Shown Shown `json:"shown"`
}

// Shown is a request with everything that would not draw as itself
// escaped (bidi controls, zero-width and other invisible characters,
// controls: \u2067, \x1b), the arguments one field at a time, nothing
// cut. Warning is set when anything was escaped: the text a model wrote
// may display as something else than what runs.
type Shown struct {
	Fields   []Field `json:"fields,omitempty"`
	Question string  `json:"question,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Warning  string  `json:"warning,omitempty"`
}

// Field is one argument of a tool call, escaped: a string as its text,
// anything else as indented JSON.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Show escapes a request's arguments (a JSON object), question and
// reason for a person to read.
func Show(arguments []byte, question, reason string) Shown {
	fs, hidden := textsafe.Fields(arguments)
	var sh Shown
	for _, f := range fs {
		sh.Fields = append(sh.Fields, Field(f))
	}
	var h1, h2 bool
	sh.Question, h1 = textsafe.Escape(question)
	sh.Reason, h2 = textsafe.Escape(reason)
	if hidden || h1 || h2 {
		sh.Warning = textsafe.Warning
	}
	return sh
}

// ViewOf is st's View at now.
func ViewOf(st State, now time.Time) View {
	q := st.Request
	v := View{ID: q.ID, Run: q.Run, Session: q.Session, Agent: q.Agent, Kind: q.Kind, Tool: q.Tool, Reason: q.Reason,
		Question: q.Question, Requested: st.RequestedAt.UTC(), Default: q.Default, Expired: st.Expired(now)}
	if json.Valid([]byte(q.Arguments)) {
		v.Arguments = json.RawMessage(q.Arguments)
	}
	if q.Schema != "" {
		v.Schema = json.RawMessage(q.Schema)
	}
	v.Shown = Show([]byte(q.Arguments), q.Question, q.Reason)
	if q.Deadline > 0 {
		d := time.Unix(0, q.Deadline).UTC()
		v.Deadline = &d
	}
	return v
}
