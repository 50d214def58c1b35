package cli

import (
	"context"
	"fmt"

	"github.com/gorath/rath"
	"github.com/gorath/rath/projections"
)

// runSessions is the set of sessions of one run: its input session and
// every session created while it ran. An unknown run is an error that
// matches projections.ErrNotFound (the CLI then hints at rath runs).
func runSessions(ctx context.Context, rt *rath.Runtime, run string) (map[string]bool, error) {
	r, err := rt.Reader().Run(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("--run: %w", err)
	}
	rows, err := rt.Reader().Sessions(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	if r.InputSession != "" {
		set[r.InputSession] = true
	}
	for _, s := range rows {
		if s.RunID.Valid && s.RunID.String == run {
			set[s.ID] = true
		}
	}
	return set, nil
}

// graphOfRun keeps the nodes in set and the edges between them.
func graphOfRun(v graphView, set map[string]bool) graphView {
	out := graphView{Nodes: []graphNode{}, Edges: v.Edges[:0:0]}
	for _, n := range v.Nodes {
		if set[n.ID] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range v.Edges {
		if set[e.Parent] && set[e.Child] {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// sessionsOfRun keeps the rows in set.
func sessionsOfRun(rows []projections.SessionRow, set map[string]bool) []projections.SessionRow {
	out := rows[:0:0]
	for _, r := range rows {
		if set[r.ID] {
			out = append(out, r)
		}
	}
	return out
}
