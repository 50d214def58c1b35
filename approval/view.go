package approval

import (
	"encoding/json"
	"time"
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
	if q.Deadline > 0 {
		d := time.Unix(0, q.Deadline).UTC()
		v.Deadline = &d
	}
	return v
}
