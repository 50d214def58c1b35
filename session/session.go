package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Aliases for the event-level types a Session exposes.
type (
	Chunk     = events.Chunk
	ToolCall  = events.ToolCall
	Usage     = events.Usage
	Placement = events.Placement
)

// Lineage kinds.
const (
	KindRoot     = "root"
	KindFork     = "fork"
	KindDetach   = "detach"
	KindMerge    = "merge"
	KindImport   = "import"
	KindCompress = "compress"
)

// Lineage says how a session came to be.
type Lineage struct {
	Kind    string   `json:"kind"`
	Parents []string `json:"parents,omitempty"`
	// Source is the session it was derived from, kept for detached sessions
	// too, which have no parents.
	Source string `json:"source,omitempty"`
}

// entry is a chunk with the place that physically holds it, which is its
// identity when merging.
type entry struct {
	chunk Chunk
	home  string
	idx   int64
}

// chunkLog is an append-only array shared by handles. A handle sees the
// first n entries; entries below any handle's n never change, so handles
// share them without copying.
type chunkLog struct {
	mu    sync.Mutex // protects items' header
	items []entry
}

func (l *chunkLog) view(n int) []entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.items[:n:n]
}

// extend returns a log whose first n+len(add) entries are the first n of l
// followed by add. It appends in place when l has exactly n entries, and
// copies otherwise (another handle already extended l past n).
func (l *chunkLog) extend(n int, add []entry) *chunkLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == n {
		l.items = append(l.items, add...)
		return l
	}
	items := make([]entry, n, n+len(add)+8)
	copy(items, l.items[:n])
	return &chunkLog{items: append(items, add...)}
}

// Session is an immutable handle on one version of a session. It is safe
// for concurrent reads; writes through it follow the rule in the package
// doc.
type Session struct {
	m         *Manager
	id        string
	version   int64
	log       *chunkLog
	n         int
	placement Placement
	lineage   Lineage
	usage     Usage
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Version returns the stream version this handle reflects.
func (s *Session) Version() int64 { return s.version }

// Len returns the number of chunks.
func (s *Session) Len() int { return s.n }

// Chunks returns a copy of the chunks.
func (s *Session) Chunks() []Chunk {
	es := s.log.view(s.n)
	out := make([]Chunk, len(es))
	for i := range es {
		out[i] = es[i].chunk
	}
	return out
}

// AppendChunksFrom appends the chunks from index `from` on to dst and
// returns the extended slice: a caller following a growing session copies
// each chunk once.
func (s *Session) AppendChunksFrom(dst []Chunk, from int) []Chunk {
	for _, e := range s.log.view(s.n)[from:] {
		dst = append(dst, e.chunk)
	}
	return dst
}

// Chunk returns chunk i.
func (s *Session) Chunk(i int) Chunk { return s.log.view(s.n)[i].chunk }

// Last returns the last chunk and false if the session is empty.
func (s *Session) Last() (Chunk, bool) {
	if s.n == 0 {
		return Chunk{}, false
	}
	return s.Chunk(s.n - 1), true
}

// Parents returns the lineage parents (none for roots and detached sessions).
func (s *Session) Parents() []string { return append([]string(nil), s.lineage.Parents...) }

// Lineage returns how the session came to be.
func (s *Session) Lineage() Lineage {
	l := s.lineage
	l.Parents = s.Parents()
	return l
}

// Placement returns where the session's tools run.
func (s *Session) Placement() Placement { return s.placement }

// Usage returns the usage accumulated along the session's lineage.
func (s *Session) Usage() Usage { return s.usage }

// Manager returns the manager that made the handle.
//
// It is the Manager in the session's scope: what it makes belongs to the
// same run.
func (s *Session) Manager() *Manager { return s.m }

// Run is the run the handle's appends belong to: the zero RunRef outside
// one. A tool finds the run it is called in so.
func (s *Session) Run() events.RunRef { return s.m.in.Run }

// In returns a handle on the same session whose appends, and those of
// every handle derived from it, are made in sc (see [Manager.In]): a run
// adopts its input session so, and hands its output back outside it with
// the zero Scope. In of nil is nil.
func (s *Session) In(sc eventlog.Scope) *Session {
	if s == nil {
		return nil
	}
	return s.with(func(c *Session) { c.m = s.m.In(sc) })
}

func (s *Session) String() string {
	return fmt.Sprintf("Session(%s v%d, %d chunks)", s.id, s.version, s.n)
}

func (s *Session) with(f func(*Session)) *Session {
	c := *s
	f(&c)
	return &c
}

// stale converts a conflict on the session's own stream into a StaleError.
func (s *Session) stale(err error) error {
	var ce *eventlog.ConflictError
	if errors.As(err, &ce) && ce.Stream == s.id {
		return &StaleError{ID: s.id, Have: s.version, Head: ce.Actual}
	}
	return err
}

// Append adds chunks at the end and returns the new handle. It fails with a
// *StaleError if the handle is not the session's head.
func (s *Session) Append(ctx context.Context, chunks ...Chunk) (*Session, error) {
	return s.Record(ctx, Record{Chunks: chunks})
}

// To places the session on a sandbox backend ("local", "bwrap",
// "opensandbox", ...) with a backend-specific spec (a directory, a JSON
// spec). Tools run where the session is placed, and derived sessions
// inherit the placement. The name is resolved when a tool first runs.
func (s *Session) To(ctx context.Context, backend, spec string) (*Session, error) {
	if backend == "" {
		return nil, invalidf("To needs a backend name")
	}
	if s.m.checkBackend != nil {
		if err := s.m.checkBackend(backend); err != nil {
			return nil, fmt.Errorf("session: place %s: %w", s.id, err)
		}
	}
	if s.m.checkPlacement != nil {
		if err := s.m.checkPlacement(backend, spec); err != nil {
			return nil, fmt.Errorf("session: place %s: %w", s.id, err)
		}
	}
	stored, err := s.m.Appender().Append(ctx, s.id, s.version, events.SessionPlaced{Session: s.id, Backend: backend, Spec: spec})
	if err != nil {
		return nil, fmt.Errorf("session: place %s: %w", s.id, s.stale(err))
	}
	return s.with(func(c *Session) {
		c.version = stored[0].Version
		c.placement = Placement{Backend: backend, Spec: spec}
	}), nil
}

// Emit records other events on the session's stream (provider calls, tool
// evidence) at this handle's version and returns the new handle. blobs are
// stored in the same transaction so the events can reference them.
func (s *Session) Emit(ctx context.Context, blobs [][]byte, evs ...events.Payload) (*Session, error) {
	return s.Record(ctx, Record{Blobs: blobs, Events: evs})
}

// Record is an atomic write to a session: blobs, then events, then chunks
// appended at the end.
type Record struct {
	Blobs  [][]byte
	Events []events.Payload
	Chunks []Chunk
}

// Record writes r atomically at this handle's version and returns the new
// handle. It fails with a *StaleError if the handle is not the head.
func (s *Session) Record(ctx context.Context, r Record) (*Session, error) {
	evs := make([]events.Payload, 0, len(r.Events)+len(r.Chunks))
	for _, p := range r.Events {
		switch p.(type) {
		case events.ChunkAppended, *events.ChunkAppended:
			return nil, invalidf("record chunks as Record.Chunks, not as events")
		}
		evs = append(evs, p)
	}
	add := make([]entry, len(r.Chunks))
	for i, c := range r.Chunks {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("session: append to %s: %w", s.id, err)
		}
		idx := int64(s.n + i)
		evs = append(evs, events.ChunkAppended{Session: s.id, Index: idx, Chunk: c})
		add[i] = entry{chunk: c, home: s.id, idx: idx}
	}
	if len(evs) == 0 && len(r.Blobs) == 0 {
		return s, nil
	}
	stored, err := s.m.Appender().AppendWrites(ctx, eventlog.Write{Stream: s.id, Expected: s.version, Events: evs, Blobs: r.Blobs})
	if err != nil {
		return nil, fmt.Errorf("session: record on %s: %w", s.id, s.stale(err))
	}
	c := *s
	if len(stored) > 0 {
		c.version = stored[len(stored)-1].Version
	}
	for _, p := range r.Events {
		applyEffect(&c, p)
	}
	keepRedacted(add, stored[len(stored)-len(add):])
	if len(add) > 0 {
		c.log = s.log.extend(s.n, add)
		c.n = s.n + len(add)
		s.m.chunks.extended(s.id, s.log, s.n, c.log, c.n)
	}
	return &c, nil
}

// Pending returns the write Emit(ctx, nil, evs...) would make at this
// handle's version, and the handle it would return once that write
// landed, for a caller that makes the write itself, atomically with
// others (a run's last record and its run.finished, in one commit).
// Chunks are not accepted: they go through Record.
func (s *Session) Pending(evs ...events.Payload) (eventlog.Write, *Session, error) {
	for _, p := range evs {
		switch p.(type) {
		case events.ChunkAppended, *events.ChunkAppended:
			return eventlog.Write{}, nil, invalidf("a pending write of chunks")
		}
	}
	if len(evs) == 0 {
		return eventlog.Write{}, nil, invalidf("a pending write of no events")
	}
	c := *s
	c.version = s.version + int64(len(evs))
	for _, p := range evs {
		applyEffect(&c, p)
	}
	return eventlog.Write{Stream: s.id, Expected: s.version, Events: evs}, &c, nil
}

// applyEffect applies what an emitted event changes on the handle.
func applyEffect(s *Session, p events.Payload) {
	switch e := p.(type) {
	case events.ProviderCalled:
		if e.Session == s.id {
			s.usage = s.usage.Add(callUsage(e.Usage))
		}
	case *events.ProviderCalled:
		if e.Session == s.id {
			s.usage = s.usage.Add(callUsage(e.Usage))
		}
	case events.SessionPlaced:
		s.placement = Placement{Backend: e.Backend, Spec: e.Spec}
	case *events.SessionPlaced:
		s.placement = Placement{Backend: e.Backend, Spec: e.Spec}
	}
}

// callUsage is the usage one provider call adds: its tokens and one call.
func callUsage(u Usage) Usage {
	u.Calls = 1
	return u
}

// Fork returns a new session sharing this handle's chunks and placement,
// with this session as its lineage parent. It works on any handle, stale or
// not: forking is how to branch from history.
func (s *Session) Fork(ctx context.Context) (*Session, error) {
	id, err := s.m.derive(ctx, s.id, "fork", func(id string, d events.Derivation) events.Payload {
		return events.SessionForked{Session: id, Source: s.id, SourceVersion: s.version, BaseLen: int64(s.n), Placement: s.placement, Usage: s.usage, Derivation: d}
	})
	if err != nil {
		return nil, fmt.Errorf("session: fork %s: %w", s.id, err)
	}
	return s.derived(id, Lineage{Kind: KindFork, Parents: []string{s.id}, Source: s.id}, s.usage), nil
}

// Detach returns a new session with this handle's chunks and placement but
// no lineage parent: the graph shows no edge, while the log keeps where it
// came from. Usage starts from zero, as usage accumulates along lineage.
func (s *Session) Detach(ctx context.Context) (*Session, error) {
	id, err := s.m.derive(ctx, s.id, "detach", func(id string, d events.Derivation) events.Payload {
		return events.SessionDetached{Session: id, Source: s.id, SourceVersion: s.version, BaseLen: int64(s.n), Placement: s.placement, Derivation: d}
	})
	if err != nil {
		return nil, fmt.Errorf("session: detach %s: %w", s.id, err)
	}
	return s.derived(id, Lineage{Kind: KindDetach, Source: s.id}, Usage{}), nil
}

// Compress returns a new session whose chunks are the given ones (a
// summary of this session, optionally followed by its last few chunks),
// with this session as its lineage parent (kind "compress"), the same
// placement and the usage so far.
func (s *Session) Compress(ctx context.Context, chunks ...Chunk) (*Session, error) {
	for i, c := range chunks {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("session: compress %s: chunk %d: %w", s.id, i, err)
		}
	}
	id, err := s.m.derive(ctx, s.id, "compress", func(id string, d events.Derivation) events.Payload {
		return events.SessionCompressed{Session: id, Source: s.id, SourceVersion: s.version, Chunks: chunks, Placement: s.placement, Usage: s.usage, Derivation: d}
	})
	if err != nil {
		return nil, fmt.Errorf("session: compress %s: %w", s.id, err)
	}
	items := make([]entry, len(chunks))
	for i, c := range chunks {
		items[i] = entry{chunk: c, home: id, idx: int64(i)}
	}
	return &Session{m: s.m, id: id, version: 1, log: &chunkLog{items: items}, n: len(items), placement: s.placement,
		lineage: Lineage{Kind: KindCompress, Parents: []string{s.id}, Source: s.id}, usage: s.usage}, nil
}

func (s *Session) derived(id string, l Lineage, u Usage) *Session {
	return &Session{m: s.m, id: id, version: 1, log: s.log, n: s.n, placement: s.placement, lineage: l, usage: u}
}

// MergeStrategy is the only merge strategy: the first session's chunks,
// then each other session's chunks after the longest prefix it shares with
// a session before it in the merge.
const MergeStrategy = "append-suffixes"

// commonPrefix is how many leading chunks a and b share (the same chunk of
// the same home session, not merely equal text).
func commonPrefix(a, b []entry) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].home == b[n].home && a[n].idx == b[n].idx {
		n++
	}
	return n
}

// Merge returns a new session whose chunks are this session's, followed by
// each other session's chunks after the longest prefix it shares with this
// one or with an other before it (so A.Merge(B, C), with C a continuation
// of B, adds B's new chunks once and then only C's own). Its
// parents are this session and the others, in order; placement comes from
// this session. Its usage counts every provider call in the parents'
// lineages once, so an ancestor the parents share is not counted twice.
func (s *Session) Merge(ctx context.Context, others ...*Session) (*Session, error) {
	if len(others) == 0 {
		return nil, invalidf("merge %s with nothing", s.id)
	}
	parents := []events.ParentRef{{ID: s.id, Version: s.version, Len: int64(s.n)}}
	ids := []string{s.id}
	before := [][]entry{s.log.view(s.n)} // the chunks of the sessions merged so far
	var add []entry
	for _, o := range others {
		if o == nil || o.m.shared != s.m.shared { // In copies a Manager; its origin's state is shared
			return nil, invalidf("merge %s: handle from another runtime", s.id)
		}
		for _, id := range ids {
			if o.id == id {
				return nil, invalidf("merge %s: session %s named twice", s.id, o.id)
			}
		}
		theirs := o.log.view(o.n)
		// The merge already holds the prefix o shares with any session
		// before it (this one, or an earlier other whose chunks o extends).
		cp := 0
		for _, p := range before {
			cp = max(cp, commonPrefix(p, theirs))
		}
		add = append(add, theirs[cp:]...)
		before = append(before, theirs)
		parents = append(parents, events.ParentRef{ID: o.id, Version: o.version, Len: int64(o.n)})
		ids = append(ids, o.id)
	}
	usage, err := s.m.unionUsage(ctx, parents)
	if err != nil {
		return nil, fmt.Errorf("session: merge %s: %w", s.id, err)
	}
	chunks := make([]Chunk, len(add))
	for i := range add {
		chunks[i] = add[i].chunk
	}
	id, err := s.m.derive(ctx, s.id, "merge", func(id string, d events.Derivation) events.Payload {
		return events.SessionMerged{Session: id, Parents: parents, Strategy: MergeStrategy, Chunks: chunks, Placement: s.placement, Usage: usage, Derivation: d}
	})
	if err != nil {
		return nil, fmt.Errorf("session: merge %s: %w", s.id, err)
	}
	rehomed := make([]entry, len(add))
	for i := range add {
		rehomed[i] = entry{chunk: add[i].chunk, home: id, idx: int64(s.n + i)}
	}
	return &Session{m: s.m, id: id, version: 1, log: s.log.extend(s.n, rehomed), n: s.n + len(rehomed),
		placement: s.placement, lineage: Lineage{Kind: KindMerge, Parents: ids, Source: s.id}, usage: usage}, nil
}
