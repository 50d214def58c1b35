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
	// Rows align the two transcripts (a longest common subsequence of
	// equal chunks): an insertion on one side is one row with a gap on
	// the other, and the chunks after it line up again.
	Rows []AlignedRow `json:"rows"`
}

// AlignedRow is one row of the side-by-side view: a chunk index on each
// side (-1: a gap), and whether the two are equal.
type AlignedRow struct {
	A    int  `json:"a"`
	B    int  `json:"b"`
	Same bool `json:"same"`
}

// maxAlign bounds the chunks aligned (the table is len(a) × len(b));
// longer transcripts are paired by index.
const maxAlign = 3000

// align pairs equal chunks along a longest common subsequence; chunks
// between two pairs face each other as changed, and the rest are gaps.
func align(a, b []ChunkView) []AlignedRow {
	n, m := len(a), len(b)
	if n*m > maxAlign*maxAlign/4 || n > maxAlign || m > maxAlign {
		rows := make([]AlignedRow, 0, max(n, m))
		for i := range max(n, m) {
			r := AlignedRow{A: -1, B: -1}
			if i < n {
				r.A = i
			}
			if i < m {
				r.B = i
			}
			r.Same = i < n && i < m && sameChunk(a[i], b[i])
			rows = append(rows, r)
		}
		return rows
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if sameChunk(a[i], b[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var rows []AlignedRow
	var da, db []int // unmatched runs since the last pair
	flush := func() {
		// Changed chunks face each other; what one side has more is a gap.
		for k := range max(len(da), len(db)) {
			r := AlignedRow{A: -1, B: -1}
			if k < len(da) {
				r.A = da[k]
			}
			if k < len(db) {
				r.B = db[k]
			}
			rows = append(rows, r)
		}
		da, db = da[:0], db[:0]
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case sameChunk(a[i], b[j]) && lcs[i][j] == lcs[i+1][j+1]+1:
			flush()
			rows = append(rows, AlignedRow{A: i, B: j, Same: true})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			da = append(da, i)
			i++
		default:
			db = append(db, j)
			j++
		}
	}
	for ; i < n; i++ {
		da = append(da, i)
	}
	for ; j < m; j++ {
		db = append(db, j)
	}
	flush()
	return rows
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
	for _, v := range sides {
		if !s.viewedTranscript(w, r, v) {
			return
		}
	}
	writeJSON(w, http.StatusOK, CompareView{A: sides[0], B: sides[1], FirstDifference: firstDifference(sides[0].Chunks, sides[1].Chunks),
		Rows: align(sides[0].Chunks, sides[1].Chunks)})
}

// showOf is a session's transcript; a run id stands for its output
// session, or its input while it has none.
func (s *Server) showOf(ctx context.Context, id string) (ShowView, error) {
	if run, err := s.reader(ctx).Run(ctx, id); err == nil {
		id = run.OutputSession
		if id == "" {
			id = run.InputSession
		}
	}
	sess, err := s.rt.Session(ctx, id)
	if err != nil {
		return ShowView{}, err
	}
	row, err := s.reader(ctx).Session(ctx, id)
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
		if !sameChunk(a[i], b[i]) {
			return i
		}
	}
	return -1
}

// sameChunk compares role, content, name, tool calls and results; not
// who wrote them.
func sameChunk(a, b ChunkView) bool {
	x, y := a.Chunk, b.Chunk
	return x.Role == y.Role && x.Content == y.Content && x.Name == y.Name && x.ToolCallID == y.ToolCallID && reflect.DeepEqual(x.ToolCalls, y.ToolCalls)
}
