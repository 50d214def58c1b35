package console

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gorath/rath/internal/jsonview"
)

// GraphLabel is what the graph draws on a session besides its id: the
// agent that called models on it, and the outcome of the run it is the
// output of.
type GraphLabel struct {
	Agent   string `json:"agent,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// apiGraphLabels is GET /api/graph/labels[?run=]: labels by session id,
// for the whole store or one run (kept apart from /api/graph, whose JSON
// is `rath graph --format json`'s).
func (s *Server) apiGraphLabels(w http.ResponseWriter, r *http.Request) {
	v, err := s.graphLabels(r.Context(), r.URL.Query().Get("run"))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) graphLabels(ctx context.Context, run string) (map[string]GraphLabel, error) {
	db := s.db(ctx)
	out := map[string]GraphLabel{}
	q, args := `SELECT session, agent FROM usage WHERE agent <> '' GROUP BY session, agent ORDER BY session, MIN(seq)`, []any{}
	if run != "" {
		q, args = `SELECT session, agent FROM usage WHERE agent <> '' AND run_id = ? GROUP BY session, agent ORDER BY session, MIN(seq)`, []any{run}
	}
	rows, err := db.QueryContext(ctx, db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("graph labels: %w", err)
	}
	for rows.Next() {
		var session, agent string
		if err := rows.Scan(&session, &agent); err != nil {
			rows.Close()
			return nil, fmt.Errorf("graph labels: %w", err)
		}
		l := out[session]
		if l.Agent == "" {
			l.Agent = agent
		} else if l.Agent != agent {
			l.Agent += ", " + agent
		}
		out[session] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("graph labels: %w", err)
	}
	q, args = `SELECT output_session, status FROM runs WHERE output_session <> '' AND finished_seq IS NOT NULL`, []any{}
	if run != "" {
		q, args = q+` AND id = ?`, []any{run}
	}
	rows, err = db.QueryContext(ctx, db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("graph labels: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var session, status string
		if err := rows.Scan(&session, &status); err != nil {
			return nil, fmt.Errorf("graph labels: %w", err)
		}
		l := out[session]
		l.Outcome = jsonview.StatusWord(status)
		out[session] = l
	}
	return out, rows.Err()
}
