package console

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
)

// apiApprovals is GET /api/approvals[?run=]: the pending requests, what
// `rath approvals --json` prints.
func (s *Server) apiApprovals(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rows, err := s.reader(ctx).PendingApprovals(ctx)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "approvals: %v", err)
		return
	}
	run := r.URL.Query().Get("run")
	now := s.opts.Now()
	if s.fleetClock {
		if now, err = fleet.Now(ctx, s.rt); err != nil {
			writeError(w, http.StatusInternalServerError, "approvals: %v", err)
			return
		}
	}
	out := []approval.View{}
	for _, row := range rows {
		if run != "" && row.Run != run {
			continue
		}
		st, err := approval.Load(ctx, s.rt.Store(), row.ID)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "approvals: %v", err)
			return
		}
		out = append(out, approval.ViewOf(st, now))
	}
	// The inbox shows what each request's tool would run with (or its
	// question): content of its run, recorded once per run shown.
	seen := map[string]bool{}
	for _, v := range out {
		key := v.Run
		if key == "" {
			key = "session:" + v.Session
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if !s.viewed(w, r, access.Viewed{Run: v.Run, Session: v.Session, What: events.ViewedApproval}) {
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// DecisionRequest is the body of POST /api/approvals/{id}.
type DecisionRequest struct {
	// Decision is approve, reject or answer.
	Decision string `json:"decision"`
	// By is ignored: the decision records the identity the request was
	// made as (its subject, issuer and way), never a name typed in.
	By string `json:"by,omitempty"`
	// Note is a remark; for reject, the reason the model reads (required).
	Note string `json:"note,omitempty"`
	// Arguments, for approve, are edited arguments to run instead.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Answer, for answer, is JSON matching the question's schema.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// DecisionView is the answer to a decision: the recorded event and what
// happens next.
type DecisionView struct {
	Decided *events.ApprovalDecided `json:"decided"`
	Next    string                  `json:"next"`
}

// apiDecide is POST /api/approvals/{id}: records a person's decision. A
// refused decision writes nothing: 404 for an unknown request, 409 for
// one decided already or past its deadline, 400 for one that does not fit.
func (s *Server) apiDecide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req DecisionRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "decision: %v", err)
		return
	}
	who, _ := access.IdentityFrom(r.Context())
	d := approval.Decision{By: who.Subject, Issuer: who.Issuer, Via: who.Via, Note: req.Note}
	switch req.Decision {
	case "approve":
		d.Decision = events.DecisionApproved
		if len(req.Arguments) > 0 {
			d.EditedArguments = string(req.Arguments)
		}
	case "reject":
		if strings.TrimSpace(req.Note) == "" {
			writeError(w, http.StatusBadRequest, "decision: a rejection needs a reason (note): the model reads it")
			return
		}
		d.Decision = events.DecisionRejected
	case "answer":
		if len(req.Answer) == 0 {
			writeError(w, http.StatusBadRequest, "decision: answer needs the answer, as JSON")
			return
		}
		d.Decision, d.Answer = events.DecisionAnswered, req.Answer
	default:
		writeError(w, http.StatusBadRequest, "decision: %q is not approve, reject or answer", req.Decision)
		return
	}
	// Judged on the clock the deadline was set by (fleet.Now).
	at, err := fleet.Now(r.Context(), s.rt)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	decided, err := approval.Decide(r.Context(), s.rt.Store(), id, d, at)
	switch {
	case errors.Is(err, approval.ErrUnknown):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, approval.ErrDecided), errors.Is(err, approval.ErrExpired):
		writeError(w, http.StatusConflict, "%v", err)
	case errors.Is(err, approval.ErrInvalid):
		writeError(w, http.StatusBadRequest, "%v", err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "decision: %v", err)
	default:
		writeJSON(w, http.StatusOK, DecisionView{Decided: decided,
			Next: "the run continues when a worker takes it up, or with: rath resume " + decided.Run})
	}
}
