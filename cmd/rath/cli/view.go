package cli

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// sessionView is a session's metadata as the CLI prints it.
type sessionView struct {
	ID         string       `json:"id"`
	Kind       string       `json:"kind"`
	Origin     string       `json:"origin,omitempty"`
	Chunks     int64        `json:"chunks"`
	Version    int64        `json:"version"`
	Backend    string       `json:"backend,omitempty"`
	Spec       string       `json:"spec,omitempty"`
	Parents    []string     `json:"parents"`
	Source     string       `json:"source,omitempty"`
	Usage      events.Usage `json:"usage"`
	Incomplete bool         `json:"incomplete,omitempty"`
	CreatedSeq int64        `json:"created_seq"`
	UpdatedSeq int64        `json:"updated_seq"`
}

func newSessionView(r projections.SessionRow, parents []string) sessionView {
	if parents == nil {
		parents = []string{}
	}
	return sessionView{
		ID: r.ID, Kind: r.Kind, Origin: r.Origin, Chunks: r.Length, Version: r.Version,
		Backend: r.Backend, Spec: r.Spec, Parents: parents, Source: r.Source.String,
		Usage: r.Usage(), Incomplete: r.Incomplete, CreatedSeq: r.CreatedSeq, UpdatedSeq: r.UpdatedSeq,
	}
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
