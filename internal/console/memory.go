package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
)

// NamespaceView is one memory namespace: how many memories it holds.
type NamespaceView struct {
	Namespace  string `json:"namespace"`
	Live       int64  `json:"live"`
	Remembered int64  `json:"remembered"`
	Forgotten  int64  `json:"forgotten"`
}

// apiMemoryNamespaces is GET /api/memory/namespaces: every namespace the
// log holds memories for, from the events' type index (no memory index is
// opened).
func (s *Server) apiMemoryNamespaces(w http.ResponseWriter, r *http.Request) {
	db := s.db(r.Context())
	// The second condition lets the partial type index serve the query.
	rows, err := db.QueryContext(r.Context(), db.Rebind(`SELECT stream, type, COUNT(*) FROM events
		WHERE type IN (?, ?) AND type <> 'chunk.appended' GROUP BY stream, type ORDER BY stream`),
		events.TypeMemoryRemembered, events.TypeMemoryForgotten)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "memory: namespaces: %v", err)
		return
	}
	defer rows.Close()
	out := []NamespaceView{}
	for rows.Next() {
		var stream, typ string
		var n int64
		if err := rows.Scan(&stream, &typ, &n); err != nil {
			writeError(w, http.StatusInternalServerError, "memory: namespaces: %v", err)
			return
		}
		ns, ok := strings.CutPrefix(stream, events.MemoryStream(""))
		if !ok {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Namespace != ns {
			out = append(out, NamespaceView{Namespace: ns})
		}
		v := &out[len(out)-1]
		if typ == events.TypeMemoryRemembered {
			v.Remembered = n
		} else {
			v.Forgotten = n
		}
		v.Live = v.Remembered - v.Forgotten
	}
	if err := rows.Err(); err != nil {
		writeError(w, http.StatusInternalServerError, "memory: namespaces: %v", err)
		return
	}
	// The log's index holds every tenant's: keep the request's.
	out = slices.DeleteFunc(out, func(v NamespaceView) bool { return !s.namespaceVisible(r.Context(), v.Namespace) })
	writeJSON(w, http.StatusOK, out)
}

// MemoryItem is one live memory with its provenance: the run whose event
// remembered it, the session it was taken from, the agent that wrote it.
type MemoryItem struct {
	memory.Item
	Run   string `json:"run,omitempty"`
	Agent string `json:"agent,omitempty"`
	At    string `json:"at,omitempty"`
}

// MemoryListView is GET /api/memory/list: a page of a namespace's live
// memories, newest first.
type MemoryListView struct {
	Namespace string       `json:"namespace"`
	Total     int          `json:"total"`
	Items     []MemoryItem `json:"items"`
}

// apiMemoryList is GET /api/memory/list?ns=[&offset=&limit=]: browse a
// namespace without a query.
func (s *Server) apiMemoryList(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("ns")
	if strings.TrimSpace(ns) == "" {
		writeError(w, http.StatusBadRequest, "ns= is required")
		return
	}
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<40)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	mem, err := s.rt.Memory(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	items, err := mem.List(r.Context(), ns)
	if errors.Is(err, memory.ErrInvalid) {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	v := MemoryListView{Namespace: ns, Total: len(items), Items: []MemoryItem{}}
	// Newest first: the page a person opens is what was learned lately.
	for i := len(items) - 1 - int(offset); i >= 0 && len(v.Items) < int(limit); i-- {
		v.Items = append(v.Items, MemoryItem{Item: items[i]})
	}
	if err := s.provenance(r.Context(), v.Items); err != nil {
		writeError(w, http.StatusInternalServerError, "memory: %v", err)
		return
	}
	if len(v.Items) > 0 && !s.viewed(w, r, access.Viewed{Namespace: ns, What: events.ViewedMemory}) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// provenance fills each item's run and time from its memory.remembered
// event (one query), and its agent from what the memory's metadata says
// wrote it.
func (s *Server) provenance(ctx context.Context, items []MemoryItem) error {
	if len(items) == 0 {
		return nil
	}
	db := s.db(ctx)
	seqs := make([]any, len(items))
	for i, it := range items {
		seqs[i] = it.Seq
	}
	rows, err := db.QueryContext(ctx, db.Rebind(`SELECT seq, COALESCE(run_id, ''), at FROM events WHERE seq IN (?`+strings.Repeat(",?", len(seqs)-1)+`)`), seqs...)
	if err != nil {
		return fmt.Errorf("provenance: %w", err)
	}
	defer rows.Close()
	type origin struct {
		run string
		at  int64
	}
	by := map[int64]origin{}
	for rows.Next() {
		var seq, at int64
		var run string
		if err := rows.Scan(&seq, &run, &at); err != nil {
			return fmt.Errorf("provenance: %w", err)
		}
		by[seq] = origin{run, at}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("provenance: %w", err)
	}
	for i := range items {
		it := &items[i]
		o := by[it.Seq]
		it.Run = o.run
		if o.at > 0 {
			it.At = time.Unix(0, o.at).UTC().Format(time.RFC3339)
		}
		it.Agent = it.Meta["author"]
		if it.Agent == "" {
			it.Agent = it.Meta["agent"]
		}
		if it.Run == "" && it.Session != "" {
			it.Run = s.runOfSession(ctx, it.Session)
		}
	}
	return nil
}

// runOfSession is the run that wrote a session, or (for a session made
// before its run, like a run's input) the last run that read or wrote
// it; "" if none.
func (s *Server) runOfSession(ctx context.Context, id string) string {
	if row, err := s.reader(ctx).Session(ctx, id); err == nil && row.RunID.Valid {
		return row.RunID.String
	}
	db := s.db(ctx)
	var run string
	if err := db.GetContext(ctx, &run, db.Rebind(`SELECT id FROM runs WHERE output_session = ? OR input_session = ? ORDER BY started_seq DESC LIMIT 1`), id, id); err != nil {
		return ""
	}
	return run
}

// ForgetRequest is the body of POST /api/memory/forget.
type ForgetRequest struct {
	Namespace string `json:"ns"`
	ID        string `json:"id"`
	// Reason is required: a forgotten memory stays in the log, and the
	// tombstone says why it no longer counts.
	Reason string `json:"reason"`
	// By is ignored: the tombstone records the identity the request was
	// made as.
	By string `json:"by,omitempty"`
}

// reasonForgetter is a memory backend that records why (the local one).
type reasonForgetter interface {
	ForgetBecause(ctx context.Context, ns, id, reason, by string) error
}

// ForgetView answers a forget: whether the backend recorded the reason.
type ForgetView struct {
	Forgotten      string `json:"forgotten"`
	ReasonRecorded bool   `json:"reason_recorded"`
}

// apiMemoryForget is POST /api/memory/forget: a tombstone for one memory,
// with the reason and who forgot it.
func (s *Server) apiMemoryForget(w http.ResponseWriter, r *http.Request) {
	var req ForgetRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "forget: %v", err)
		return
	}
	id, _ := access.IdentityFrom(r.Context())
	req.Reason, req.By = strings.TrimSpace(req.Reason), id.Subject
	if req.Namespace == "" || req.ID == "" || req.Reason == "" {
		writeError(w, http.StatusBadRequest, "forget: ns, id and reason are required")
		return
	}
	mem, err := s.rt.Memory(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	// Any backend behind memory.Memory forgets; the local one also keeps
	// the reason on the tombstone.
	var backend memory.Memory = mem
	rf, withReason := backend.(reasonForgetter)
	if withReason {
		err = rf.ForgetBecause(r.Context(), req.Namespace, req.ID, req.Reason, req.By)
	} else {
		err = backend.Forget(r.Context(), req.Namespace, req.ID)
	}
	switch {
	case errors.Is(err, memory.ErrNotFound):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, memory.ErrInvalid):
		writeError(w, http.StatusBadRequest, "%v", err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "forget: %v", err)
	default:
		writeJSON(w, http.StatusOK, ForgetView{Forgotten: req.ID, ReasonRecorded: withReason})
	}
}
