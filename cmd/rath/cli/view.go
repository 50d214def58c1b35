package cli

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/projections"
)

// sessionView is a session's metadata as the CLI prints it.
type sessionView = jsonview.Session

func newSessionView(r projections.SessionRow, parents []string) sessionView {
	return jsonview.SessionOf(r, parents)
}

// parentsByChild groups the graph's edges by child, in edge position order.
func parentsByChild(ctx context.Context, r *projections.Reader) (map[string][]string, error) {
	edges, err := r.Edges(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range edges {
		out[e.Child] = append(out[e.Child], e.Parent)
	}
	return out, nil
}

// orDash returns s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to at most n runes on one line, for table cells, with
// control characters escaped (see termSafe).
func clip(s string, n int) string {
	s = termSafe(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
