package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/session"
)

// CompareView is GET /api/compare: two sessions side by side and the
// first chunk where they differ.
type CompareView struct {
	A ShowView `json:"a"`
	B ShowView `json:"b"`
	// FirstDifference is the index of the first chunk that differs (or
	// that one side lacks); -1 when the transcripts are equal.
	FirstDifference int `json:"first_difference"`
}

// apiCompare is GET /api/compare?a=&b=: each side a session id, or a run
// id standing for the run's output session (its input while it runs).
func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var sides [2]ShowView
	for i, name := range []string{"a", "b"} {
		id := strings.TrimSpace(r.URL.Query().Get(name))
		if id == "" {
			writeError(w, http.StatusBadRequest, "compare: %s= is required (a session or run id)", name)
			return
		}
		v, err := s.showOf(ctx, id)
		if errors.Is(err, session.ErrNotFound) {
			writeError(w, http.StatusNotFound, "compare: %s: %v", name, err)
			return
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, "compare: %s: %v", name, err)
			return
		}
		sides[i] = v
	}
	writeJSON(w, http.StatusOK, CompareView{A: sides[0], B: sides[1], FirstDifference: firstDifference(sides[0].Chunks, sides[1].Chunks)})
}

// showOf is a session's transcript; a run id stands for its output
// session, or its input while it has none.
func (s *Server) showOf(ctx context.Context, id string) (ShowView, error) {
	if run, err := s.rt.Reader().Run(ctx, id); err == nil {
		id = run.OutputSession
		if id == "" {
			id = run.InputSession
		}
	}
	sess, err := s.rt.Session(ctx, id)
	if err != nil {
		return ShowView{}, err
	}
	row, err := s.rt.Reader().Session(ctx, id)
	if err != nil {
		return ShowView{}, fmt.Errorf("%w: %v", session.ErrNotFound, err)
	}
	v := ShowView{Session: jsonview.SessionOf(row, sess.Parents()), Chunks: []ChunkView{}}
	for i, c := range sess.Chunks() {
		v.Chunks = append(v.Chunks, ChunkView{Index: i, Chunk: c})
	}
	return v, nil
}

// firstDifference compares chunk by chunk (role, content, name, tool
// calls and results; not who wrote them).
func firstDifference(a, b []ChunkView) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) {
			return i
		}
		x, y := a[i].Chunk, b[i].Chunk
		if x.Role != y.Role || x.Content != y.Content || x.Name != y.Name || x.ToolCallID != y.ToolCallID || !reflect.DeepEqual(x.ToolCalls, y.ToolCalls) {
			return i
		}
	}
	return -1
}
