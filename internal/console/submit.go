package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
)

// Bounds of POST /api/runs: a body past maxSubmitBody or with more runs
// than maxSubmitRuns is refused before anything is parsed further.
const (
	maxSubmitBody = 8 << 20
	maxSubmitRuns = 1000
)

// ErrBadSubmission is matched by a Submit error that is the request's
// fault (a run that does not check out): the answer is 400, not 500.
var ErrBadSubmission = errors.New("console: a submitted run does not check out")

// SubmittedRun is one run POST /api/runs put on the queue.
type SubmittedRun struct {
	Run          string `json:"run"`
	InputSession string `json:"input_session"`
}

// SubmitFunc submits runs of tenant (a valid tenant's name, never
// empty), each a JSON object of the schema of a line of `rath submit
// --batch`, in one transaction: all or none. An error matching
// ErrBadSubmission says which run and why.
type SubmitFunc func(ctx context.Context, tenant string, runs []json.RawMessage) ([]SubmittedRun, error)

// apiSubmit is POST /api/runs: a run object, or an array of them,
// submitted in one transaction, as runs of the signed-in identity's
// tenant (the default tenant's for the local modes' operator, who acts
// for every tenant). 201 with the runs' ids in order; 400 for
// a body or a run that does not check out, and then nothing is written.
func (s *Server) apiSubmit(w http.ResponseWriter, r *http.Request) {
	if s.opts.Submit == nil {
		writeError(w, http.StatusNotImplemented, "this console does not submit runs")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSubmitBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "submit: %v", err)
		return
	}
	if len(body) > maxSubmitBody {
		writeError(w, http.StatusRequestEntityTooLarge, "submit: the body is over %d bytes", maxSubmitBody)
		return
	}
	runs, err := splitRuns(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "submit: %v", err)
		return
	}
	id, _ := access.IdentityFrom(r.Context())
	out, err := s.opts.Submit(r.Context(), events.TenantOr(id.Tenant), runs)
	switch {
	case errors.Is(err, ErrBadSubmission):
		writeError(w, http.StatusBadRequest, "%v", err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "submit: %v", err)
	default:
		writeJSON(w, http.StatusCreated, out)
	}
}

// splitRuns takes a run object or an array of them; each run is parsed
// by Submit, which refuses unknown fields.
func splitRuns(body []byte) ([]json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, errors.New("the body is empty: want a run object or an array of them")
	}
	var runs []json.RawMessage
	if body[0] == '[' {
		if err := json.Unmarshal(body, &runs); err != nil {
			return nil, errors.New("the body is not a JSON array of run objects")
		}
	} else {
		runs = []json.RawMessage{body}
	}
	if len(runs) == 0 {
		return nil, errors.New("no run in the body")
	}
	if len(runs) > maxSubmitRuns {
		return nil, fmt.Errorf("more than %d runs in one request", maxSubmitRuns)
	}
	for _, r := range runs {
		if t := bytes.TrimSpace(r); len(t) == 0 || t[0] != '{' {
			return nil, errors.New("each run is a JSON object")
		}
	}
	return runs, nil
}
