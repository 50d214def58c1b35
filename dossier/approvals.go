package dossier

import (
	"context"
	"fmt"
	"time"

	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/textsafe"
)

// Approval is a request the run made of a person (a tool call to approve,
// a question) and what was decided: who, when, and what changed.
type Approval struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"` // tool, question
	Session      string    `json:"session"`
	Agent        string    `json:"agent,omitempty"`
	CallID       string    `json:"call_id,omitempty"`
	Tool         string    `json:"tool,omitempty"`
	Arguments    string    `json:"arguments,omitempty"`
	ArgsHash     string    `json:"args_hash,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Question     string    `json:"question,omitempty"`
	Schema       string    `json:"schema,omitempty"`
	RequestedSeq int64     `json:"requested_seq"`
	RequestedAt  time.Time `json:"requested_at"`
	Deadline     time.Time `json:"deadline,omitzero"`
	Default      string    `json:"default,omitempty"`
	// Status is pending, or the decision: approved, rejected, answered.
	Status          string    `json:"status"`
	By              string    `json:"by,omitempty"`
	Note            string    `json:"note,omitempty"`
	EditedArguments string    `json:"edited_arguments,omitempty"`
	Answer          string    `json:"answer,omitempty"`
	DecidedSeq      int64     `json:"decided_seq,omitempty"`
	DecidedAt       time.Time `json:"decided_at,omitzero"`
	// Shown is the request as the approver saw it: arguments one field
	// at a time, in full, what would not draw as itself escaped, and a
	// warning when anything was.
	Shown approval.Shown `json:"shown"`
}

// approvals reads the run's requests and their decisions (the decisions
// are not the run's events: they came from outside, on the request's
// stream).
func (b *builder) approvals(ctx context.Context, runID string) error {
	rows, err := b.rt.Reader().RunApprovals(ctx, runID)
	if err != nil {
		return fmt.Errorf("dossier: approvals of %s: %w", runID, err)
	}
	for _, r := range rows {
		st, err := approval.Load(ctx, b.rt.Store(), r.ID)
		if err != nil {
			b.warn("approval %s: %v", r.ID, err)
			continue
		}
		q := st.Request
		a := Approval{ID: q.ID, Kind: q.Kind, Session: q.Session, Agent: q.Agent, CallID: q.CallID, Tool: q.Tool, Arguments: q.Arguments,
			ArgsHash: q.ArgsHash, Reason: q.Reason, Question: q.Question, Schema: q.Schema, RequestedSeq: r.RequestedSeq,
			RequestedAt: st.RequestedAt.UTC(), Default: q.Default, Status: "pending",
			Shown: approval.Show([]byte(q.Arguments), q.Question, q.Reason)}
		if q.Deadline > 0 {
			a.Deadline = time.Unix(0, q.Deadline).UTC()
		}
		if d := st.Decision; d != nil {
			a.Status, a.By, a.Note, a.EditedArguments, a.Answer = d.Decision, d.By, d.Note, d.EditedArguments, d.Answer
			a.DecidedAt = st.DecidedAt.UTC()
			if r.DecidedSeq.Valid {
				a.DecidedSeq = r.DecidedSeq.Int64
			}
		}
		b.d.Approvals = append(b.d.Approvals, a)
	}
	return nil
}

// What is the request as the approver saw it, escaped and in full: the
// question, or the tool and its arguments field by field.
func (a Approval) What() string {
	if a.Kind == events.ApprovalQuestion {
		return a.Shown.Question
	}
	s := a.Tool
	for _, f := range a.Shown.Fields {
		if f.Name != "" {
			s += " " + f.Name + ":"
		}
		s += " " + f.Value
	}
	return s
}

// Outcome is the decision in a few words.
func (a Approval) Outcome() string {
	if a.Status == "pending" {
		return "pending"
	}
	s := a.Status + " by " + a.By
	if a.Note != "" {
		s += ": " + a.Note
	}
	if a.EditedArguments != "" {
		s += "; edited arguments " + a.EditedArguments
	}
	if a.Answer != "" {
		s += "; answer " + a.Answer
	}
	s, _ = textsafe.Escape(s)
	return s
}
