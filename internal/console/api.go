package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gorath/rath"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"
)

// heartbeat is how often an idle live tail sends a comment, so proxies
// and the browser keep the connection.
const heartbeat = 15 * time.Second

// apiRunStream tails a run's events as Server-Sent Events: every event
// after ?after= (or the Last-Event-ID the browser sends on reconnect) as
// an "event" message whose id is its seq, then "end" once the run's
// run.finished is sent. It wakes on the store's append notifications.
func (s *Server) apiRunStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, err := intParam(r, "after", 0, 0, 1<<62)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		var n int64
		if _, err := fmt.Sscanf(last, "%d", &n); err == nil && n > after {
			after = n
		}
	}
	row, err := s.reader(r.Context()).Run(r.Context(), id)
	if notFound(w, err) {
		return
	}
	rc := http.NewResponseController(w)
	if row.FinishedSeq.Valid && after >= row.FinishedSeq.Int64 {
		// Nothing more will come: the client has the whole run.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		return
	}
	// The tail is one read, recorded before any of it is sent: from
	// after+1 onward (no end).
	if !s.viewed(w, r, access.Viewed{Run: id, FromSeq: after + 1, What: events.ViewedEvents}) {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type item struct {
		ev  events.Event
		err error
	}
	ch := make(chan item)
	go func() {
		defer close(ch)
		for ev, err := range s.rt.Store().Subscribe(ctx, eventlog.Query{RunID: id, FromSeq: after + 1}) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			rc.Flush()
		case it, ok := <-ch:
			if !ok {
				return
			}
			if it.err != nil {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", sseJSON(apiError{Error: it.err.Error()}))
				rc.Flush()
				return
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: event\ndata: %s\n\n", it.ev.Seq, sseJSON(it.ev)); err != nil {
				return
			}
			if it.ev.Type == events.TypeRunFinished && it.ev.Stream == id {
				fmt.Fprint(w, "event: end\ndata: {}\n\n")
				rc.Flush()
				return
			}
			rc.Flush()
		}
	}
}

// sseJSON is v as one line of JSON (json.Marshal writes no newline; it
// escapes <, > and &).
func sseJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(apiError{Error: err.Error()})
	}
	return b
}

// SessionView is a session's metadata, as `rath show --json` prints it.
type SessionView = jsonview.Session

// ChunkView is one transcript entry with its index.
type ChunkView struct {
	Index int `json:"index"`
	events.Chunk
}

// ShowView is GET /api/sessions/{id}: what `rath show --json` prints.
type ShowView struct {
	Session SessionView `json:"session"`
	Chunks  []ChunkView `json:"chunks"`
}

func (s *Server) apiSession(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	v, err := s.showOf(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		writeError(w, http.StatusNotFound, "%v", err)
		return
	}
	if notFound(w, err) {
		return
	}
	if !s.viewedTranscript(w, r, v) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// GraphNode, GraphEdge and GraphView are `rath graph --format json`'s
// (GraphView is GET /api/graph).
type (
	GraphNode = jsonview.GraphNode
	GraphEdge = jsonview.GraphEdge
	GraphView = jsonview.Graph
)

// maxGraph is the most sessions GET /api/graph returns without ?run=.
const maxGraph = 2000

func (s *Server) apiGraph(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run := r.URL.Query().Get("run")
	if run == "" {
		v, err := s.wholeGraph(ctx)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		if len(v.Nodes) > maxGraph {
			writeError(w, http.StatusRequestEntityTooLarge, "the store holds %d sessions: ask for one run's graph with ?run=", len(v.Nodes))
			return
		}
		writeJSON(w, http.StatusOK, v)
		return
	}
	v, err := s.runGraph(ctx, run)
	if notFound(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) wholeGraph(ctx context.Context) (GraphView, error) {
	return jsonview.LoadGraph(ctx, s.reader(ctx))
}

const sessionGraphCols = `id, kind, origin, length, incomplete, created_seq`

type graphRow struct {
	ID         string `db:"id"`
	Kind       string `db:"kind"`
	Origin     string `db:"origin"`
	Length     int64  `db:"length"`
	Incomplete bool   `db:"incomplete"`
	CreatedSeq int64  `db:"created_seq"`
}

// runGraph is the sessions a run wrote (the sessions' run index), its
// input, and the lineage edges into them with their parents.
func (s *Server) runGraph(ctx context.Context, runID string) (GraphView, error) {
	run, err := s.reader(ctx).Run(ctx, runID)
	if err != nil {
		return GraphView{}, err
	}
	db := s.db(ctx)
	var rows []graphRow
	if err := db.SelectContext(ctx, &rows, db.Rebind(`SELECT `+sessionGraphCols+` FROM sessions WHERE run_id = ? ORDER BY created_seq`), runID); err != nil {
		return GraphView{}, fmt.Errorf("graph: %w", err)
	}
	v := GraphView{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	seen := map[string]bool{}
	for _, row := range rows {
		seen[row.ID] = true
		v.Nodes = append(v.Nodes, GraphNode{ID: row.ID, Kind: row.Kind, Origin: row.Origin, Chunks: row.Length, Incomplete: row.Incomplete, InRun: true})
	}
	add := func(id string) error {
		if id == "" || seen[id] {
			return nil
		}
		row, err := s.reader(ctx).Session(ctx, id)
		if errors.Is(err, projections.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		seen[id] = true
		v.Nodes = append(v.Nodes, GraphNode{ID: row.ID, Kind: row.Kind, Origin: row.Origin, Chunks: row.Length, Incomplete: row.Incomplete})
		return nil
	}
	if err := add(run.InputSession); err != nil {
		return GraphView{}, err
	}
	for _, row := range rows {
		es, err := s.reader(ctx).Parents(ctx, row.ID)
		if err != nil {
			return GraphView{}, err
		}
		for _, e := range es {
			if err := add(e.Parent); err != nil {
				return GraphView{}, err
			}
			v.Edges = append(v.Edges, jsonview.EdgeOf(e))
		}
	}
	return v, nil
}

// ReplayView is POST /api/runs/{id}/replay: the replay's report as
// `rath replay --json` prints it, and ok.
type ReplayView struct {
	OK bool `json:"ok"`
	*replay.Report
}

func (s *Server) apiRunReplay(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	live := r.URL.Query().Get("live_tools") == "1"
	if live && s.refuseLive(w, "replay with live tools") {
		return
	}
	if _, err := s.reader(ctx).Run(ctx, id); notFound(w, err) {
		return
	}
	wf, err := s.rt.RecordedWorkflow(ctx, id, rath.ReplayMode)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "cannot rebuild the run's workflow: %v", err)
		return
	}
	var opts []replay.Option
	if live {
		// The tools run again for real, each in a fresh copy of its
		// recorded workspace (rath replay --live-tools), on the backends
		// the runtime has (those rath serve --allow-live was given).
		opts = append(opts, replay.WithLiveTools(), replay.WithCopiesIn(s.opts.LiveCopies))
	}
	s.heavy.Lock()
	defer s.heavy.Unlock()
	rep, err := replay.Run(ctx, s.rt, id, wf, opts...)
	switch {
	case errors.Is(err, sandbox.ErrUnknownBackend), errors.Is(err, sandbox.ErrInvalidSpec):
		writeError(w, http.StatusForbidden, "replay with live tools: %v", err)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "replay: %v", err)
		return
	}
	v := &ReplayView{OK: rep.OK(), Report: rep}
	s.replays.Lock()
	s.replays.m[id] = v
	s.replays.Unlock()
	writeJSON(w, http.StatusOK, v)
}

// VerifyView is POST /api/verify: what `rath verify --json` prints.
type VerifyView = jsonview.Verify

func (s *Server) apiVerify(w http.ResponseWriter, r *http.Request) {
	var opts eventlog.VerifyOptions
	if h := r.URL.Query().Get("head"); h != "" {
		head, err := eventlog.ParseHead(h)
		if err != nil {
			writeError(w, http.StatusBadRequest, "head: %v", err)
			return
		}
		opts.Head = &head
	}
	s.heavy.Lock()
	defer s.heavy.Unlock()
	rep, err := s.rt.Verify(r.Context(), opts)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "verify: %v", err)
		return
	}
	v := jsonview.VerifyOf(rep)
	writeJSON(w, http.StatusOK, v)
}

// unsafeName matches what may not appear in a download's file name.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// apiRunDossier sends the run's HTML dossier as a download, or with
// ?view=1 as a page to read; ?verify=0 skips the verification of the
// whole log.
func (s *Server) apiRunDossier(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := s.reader(ctx).Run(ctx, id); notFound(w, err) {
		return
	}
	opts := dossier.Options{SkipVerify: r.URL.Query().Get("verify") == "0"}
	if v := s.lastReplay(id); v != nil {
		// The console's own replay is the dossier's verdict.
		opts.Replay = v.Report
	}
	s.heavy.Lock()
	d, err := dossier.Build(ctx, s.rt, id, opts)
	s.heavy.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "dossier: %v", err)
		return
	}
	var buf bytes.Buffer
	if err := d.Render(&buf, "html"); err != nil {
		writeError(w, http.StatusInternalServerError, "dossier: %v", err)
		return
	}
	if !s.viewed(w, r, access.Viewed{Run: id, What: events.ViewedDossier}) {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	disposition := "attachment"
	if r.URL.Query().Get("view") == "1" {
		disposition = "inline"
	}
	w.Header().Set("Content-Disposition", disposition+`; filename="dossier-`+unsafeName.ReplaceAllString(id, "_")+`.html"`)
	// The dossier holds no script, and this policy would run none: viewed
	// inline it is a static page (its model text escaped by html/template).
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'")
	w.Write(buf.Bytes())
}

// WorkersView is GET /api/workers: `rath workers --json`'s list, each
// worker with its host and pid (read from a default worker id) and the
// runs it finished, done and failed.
type WorkersView struct {
	Workers []WorkerView `json:"workers"`
}

// WorkerView is one worker of the fleet.
type WorkerView struct {
	fleet.WorkerInfo
	Host   string `json:"host,omitempty"`
	PID    int    `json:"pid,omitempty"`
	Done   int64  `json:"done"`
	Failed int64  `json:"failed"`
}

// defaultWorkerID is the id a worker gives itself: host-pid-random.
var defaultWorkerID = regexp.MustCompile(`^(.+)-([0-9]+)-[0-9a-f]+$`)

func (s *Server) apiWorkers(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ws, err := fleet.Workers(ctx, s.rt, r.URL.Query().Get("all") == "1")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// The last lease of a finished run names the worker that finished it.
	db := s.db(ctx)
	type tally struct{ done, failed int64 }
	by := map[string]*tally{}
	rows, err := db.QueryContext(ctx, `SELECT l.worker, r.status, COUNT(*) FROM run_leases l JOIN runs r ON r.id = l.run
		WHERE r.finished_seq IS NOT NULL GROUP BY l.worker, r.status`)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "workers: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var worker, status string
		var n int64
		if err := rows.Scan(&worker, &status, &n); err != nil {
			writeError(w, http.StatusInternalServerError, "workers: %v", err)
			return
		}
		t := by[worker]
		if t == nil {
			t = &tally{}
			by[worker] = t
		}
		if jsonview.StatusWord(status) == "done" {
			t.done += n
		} else {
			t.failed += n
		}
	}
	if err := rows.Err(); err != nil {
		writeError(w, http.StatusInternalServerError, "workers: %v", err)
		return
	}
	v := WorkersView{Workers: []WorkerView{}}
	for _, wi := range ws {
		wv := WorkerView{WorkerInfo: wi}
		if m := defaultWorkerID.FindStringSubmatch(wi.ID); m != nil {
			wv.Host = m[1]
			wv.PID, _ = strconv.Atoi(m[2])
		}
		if t := by[wi.ID]; t != nil {
			wv.Done, wv.Failed = t.done, t.failed
		}
		v.Workers = append(v.Workers, wv)
	}
	writeJSON(w, http.StatusOK, v)
}

// MemoryView is GET /api/memory/search.
type MemoryView struct {
	Hits []memory.Hit `json:"hits"`
}

func (s *Server) apiMemorySearch(w http.ResponseWriter, r *http.Request) {
	ns, q := r.URL.Query().Get("ns"), r.URL.Query().Get("q")
	if strings.TrimSpace(ns) == "" || strings.TrimSpace(q) == "" {
		writeError(w, http.StatusBadRequest, "ns= and q= are required")
		return
	}
	k, err := intParam(r, "k", 10, 1, 100)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	mem, err := s.rt.Memory(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	hits, err := mem.Recall(r.Context(), ns, q, int(k))
	if errors.Is(err, memory.ErrInvalid) {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if hits == nil {
		hits = []memory.Hit{}
	}
	if len(hits) > 0 && !s.viewed(w, r, access.Viewed{Namespace: ns, What: events.ViewedMemory}) {
		return
	}
	writeJSON(w, http.StatusOK, MemoryView{Hits: hits})
}
