package dossier

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// Edge kinds drawn in the graph besides the lineage kinds of the
// session_edges projection.
const (
	// EdgeDetach links a detached session to its source: provenance, not
	// lineage, so it is drawn dashed.
	EdgeDetach = "detach"
)

// graphEdgeIn is an edge before layout.
type graphEdgeIn struct {
	From, To string
	Kind     string
	Position int
	Dashed   bool
}

// sessions loads the sessions the run touched, as of its last event, and
// their lineage parents as context nodes; it collects the edges between
// them.
func (b *builder) sessions(ctx context.Context) error {
	d := b.d
	r := b.rt.Reader()
	var lastSeq int64
	if n := len(d.Events); n > 0 {
		lastSeq = d.Events[n-1].Seq
	}
	inRun := map[string]bool{}
	for _, id := range b.touched {
		inRun[id] = true
	}
	ids := append([]string(nil), b.touched...)
	present := map[string]bool{}
	for _, id := range ids {
		present[id] = true
	}
	addContext := func(id string) {
		if id != "" && !present[id] {
			present[id] = true
			ids = append(ids, id)
		}
	}
	parents := map[string][]projections.Edge{}
	rows := map[string]projections.SessionRow{}
	for _, id := range b.touched {
		row, err := r.Session(ctx, id)
		if errors.Is(err, projections.ErrNotFound) {
			b.warn("session %s is named by the run but unknown to the store", id)
			continue
		}
		if err != nil {
			return fmt.Errorf("dossier: %w", err)
		}
		rows[id] = row
		es, err := r.Parents(ctx, id)
		if err != nil {
			return fmt.Errorf("dossier: %w", err)
		}
		parents[id] = es
		for _, e := range es {
			addContext(e.Parent)
		}
		if row.Kind == session.KindDetach {
			addContext(row.Source.String)
		}
	}
	for _, id := range ids {
		if _, ok := rows[id]; ok || inRun[id] {
			continue
		}
		row, err := r.Session(ctx, id)
		if err != nil {
			return fmt.Errorf("dossier: context session %s: %w", id, err)
		}
		rows[id] = row
	}
	kept := ids[:0]
	for _, id := range ids {
		if _, ok := rows[id]; ok {
			kept = append(kept, id)
		}
	}
	ids = kept
	sort.SliceStable(ids, func(i, j int) bool {
		ri, rj := rows[ids[i]], rows[ids[j]]
		if ri.CreatedSeq != rj.CreatedSeq {
			return ri.CreatedSeq < rj.CreatedSeq
		}
		return ids[i] < ids[j]
	})
	tools := b.toolIndex()
	for _, id := range ids {
		row := rows[id]
		s := &Session{ID: id, Anchor: b.ids.make("session", id), Kind: row.Kind, Origin: row.Origin, Source: row.Source.String,
			Placement: events.Placement{Backend: row.Backend, Spec: row.Spec}, Usage: row.Usage(), Version: row.Version,
			CreatedSeq: row.CreatedSeq, InRun: inRun[id]}
		for _, e := range parents[id] {
			s.Parents = append(s.Parents, e.Parent)
			if present[e.Parent] {
				b.edges = append(b.edges, graphEdgeIn{From: e.Parent, To: id, Kind: e.Kind, Position: e.Position})
			}
		}
		if row.Kind == session.KindDetach && present[row.Source.String] && inRun[id] {
			b.edges = append(b.edges, graphEdgeIn{From: row.Source.String, To: id, Kind: EdgeDetach, Dashed: true})
		}
		if s.InRun {
			if err := b.transcript(ctx, s, lastSeq, tools); err != nil {
				return err
			}
		}
		s.Author = b.author[id]
		for _, c := range s.Chunks {
			if s.Author == "" && c.Home == id && c.Author != "" {
				s.Author = c.Author
			}
		}
		if s.Author == "" {
			s.Author = s.Origin
		}
		s.Loops = loops(b.entries[id])
		d.Sessions = append(d.Sessions, s)
		d.bySession[id] = s
	}
	return nil
}

// transcript loads s as of seq: its usage, placement and chunks, each
// chunk with where it is stored and links to its tool calls.
func (b *builder) transcript(ctx context.Context, s *Session, seq int64, tools map[pair][]*ToolCall) error {
	h, err := b.rt.SessionAt(ctx, s.ID, seq)
	if errors.Is(err, session.ErrNotFound) {
		b.warn("session %s: %v", s.ID, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("dossier: session %s: %w", s.ID, err)
	}
	s.Usage, s.Version, s.Placement = h.Usage(), h.Version(), h.Placement()
	stored, err := b.rt.Reader().Chunks(ctx, s.ID, int64(h.Len()))
	if err != nil {
		return fmt.Errorf("dossier: chunks of %s: %w", s.ID, err)
	}
	s.Chunks = make([]Chunk, len(stored))
	for i, c := range stored {
		wrote, appended := b.appended[chunkRef{c.Home, c.Index}]
		ch := Chunk{Chunk: c.Chunk, Index: i, Home: c.Home, HomeIndex: int(c.Index), New: appended || b.created[c.Home]}
		if appended {
			// Only a chunk whose writing seq is known is linked, to the
			// call of that id nearest to it: the loop records a round's
			// tool.called events just before its assistant chunk and the
			// tool_result chunks just after the tool.returned ones, and a
			// model may reuse an id in a later round.
			switch {
			case len(c.ToolCalls) > 0:
				for _, tc := range c.ToolCalls {
					ch.ToolAnchors = append(ch.ToolAnchors, nearest(tools[pair{c.Home, tc.ID}], wrote, false))
				}
			case c.Role == events.RoleToolResult:
				ch.ToolAnchors = []string{nearest(tools[pair{c.Home, c.ToolCallID}], wrote, true)}
			}
		}
		s.Chunks[i] = ch
	}
	return nil
}

func (b *builder) toolIndex() map[pair][]*ToolCall {
	m := map[pair][]*ToolCall{}
	for _, t := range b.d.Tools {
		k := pair{t.Session, t.CallID}
		m[k] = append(m[k], t)
	}
	return m
}

// nearest returns the anchor of the call in q whose tool.called (or, for
// a result, tool.returned before seq) is nearest to seq.
func nearest(q []*ToolCall, seq int64, result bool) string {
	anchor, best := "", int64(-1)
	for _, t := range q {
		at := t.Seq
		if result {
			if t.ReturnSeq == 0 || t.ReturnSeq > seq {
				continue
			}
			at = t.ReturnSeq
		}
		dist := seq - at
		if dist < 0 {
			dist = -dist
		}
		if best < 0 || dist < best {
			anchor, best = t.Anchor, dist
		}
	}
	return anchor
}

// loops returns the paths entered more than once, outermost only: a path
// inside a looping path loops with it and says nothing new.
func loops(entries map[string]int) []Loop {
	var paths []string
	for p, n := range entries {
		if n > 1 {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []Loop
	for _, p := range paths {
		inner := false
		for _, q := range paths {
			if strings.HasPrefix(p, q+".") {
				inner = true
			}
		}
		if !inner {
			out = append(out, Loop{Path: p, Count: entries[p]})
		}
	}
	return out
}
