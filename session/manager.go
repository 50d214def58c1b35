package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// Origins of root sessions.
const (
	OriginUser        = "user"
	OriginAgentPrompt = "agent_prompt"
	OriginEmpty       = "empty"
)

// maxIDAttempts bounds retries when a derived id is already taken (another
// process derived in the same scope at the same moment).
const maxIDAttempts = 16

// Manager creates and loads sessions. It is safe for concurrent use.
type Manager struct {
	store  *eventlog.Store
	reader *projections.Reader

	checkBackend   func(name string) error
	checkPlacement func(backend, spec string) error
	// local seeds the ids of sessions made outside a run. It is random per
	// Manager, so two stores, or two processes sharing one store, never
	// derive the same ids; a run's ids derive from its recorded seed.
	local string

	chunks *chunkCache // nil when disabled

	*shared
	// in is what the appends made through m and its sessions are for: a
	// run's, in the Manager In returned for the run.
	in eventlog.Scope
}

// shared is the state the Managers In returns share with their origin.
type shared struct {
	mu       sync.Mutex        // protects reserved and origins
	reserved map[string]int64  // scope -> next counter handed out in this process
	origins  map[string]origin // session -> where its creation event says it came from
}

// ManagerOption configures NewManager.
type ManagerOption func(*Manager)

// WithBackendCheck makes To fail early, with check's error, for a backend
// name the runtime does not know.
func WithBackendCheck(check func(name string) error) ManagerOption {
	return func(m *Manager) { m.checkBackend = check }
}

// WithLocalSeed sets the seed of ids made outside a run (default: 128
// random bits from crypto/rand). Give each Manager its own: two Managers
// with one local seed derive the same ids.
func WithLocalSeed(seed string) ManagerOption {
	return func(m *Manager) { m.local = seed }
}

// WithChunkCache bounds the chunks the Manager keeps in memory for the
// sessions it has read (default DefaultChunkCacheBytes; zero or less keeps
// none). With them, loading a session again, at its head or at any past
// seq, reads only what was stored since.
func WithChunkCache(bytes int64) ManagerOption {
	return func(m *Manager) { m.chunks = newChunkCache(bytes) }
}

// WithPlacementCheck makes To refuse, with check's error, a placement the
// runtime does not allow (a workspace holding the store, say).
func WithPlacementCheck(check func(backend, spec string) error) ManagerOption {
	return func(m *Manager) { m.checkPlacement = check }
}

// NewManager returns a Manager over a store whose projector set includes
// projections.Projector.
func NewManager(store *eventlog.Store, reader *projections.Reader, opts ...ManagerOption) *Manager {
	m := &Manager{store: store, reader: reader, shared: &shared{reserved: map[string]int64{}, origins: map[string]origin{}}, chunks: newChunkCache(DefaultChunkCacheBytes)}
	for _, o := range opts {
		o(m)
	}
	if m.local == "" {
		m.local = "local-" + rand.Text()
	}
	return m
}

// Store returns the event store.
func (m *Manager) Store() *eventlog.Store { return m.store }

// In returns a Manager whose appends, and those of every session it
// makes, loads or derives, are made in sc: a run's sessions are stamped
// with its id, fenced by its lease, carry what it carries and derive
// their ids from its seed. It shares m's caches and counters.
func (m *Manager) In(sc eventlog.Scope) *Manager {
	c := *m
	c.in = sc
	return &c
}

// Scope returns what m's appends are made for.
func (m *Manager) Scope() eventlog.Scope { return m.in }

// Appender appends in m's scope: for the events a caller records beside
// its sessions' (an approval request, a side call), in the same run.
func (m *Manager) Appender() eventlog.Appender { return m.store.In(m.in) }

// Reader returns the read model.
func (m *Manager) Reader() *projections.Reader { return m.reader }

// DeriveID returns the id of the counter-th session derived by op in scope
// (a parent session id, or empty for roots) under seed.
func DeriveID(seed, scope, op string, counter int64) string {
	h := sha256.New()
	for _, part := range []string{seed, scope, op} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], uint64(counter))
	h.Write(c[:])
	return "s-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// seedOf is the seed ids derive from: the run's recorded seed inside a run
// (a replay derives the same ids), else the Manager's own local seed.
func (m *Manager) seedOf() string {
	if m.in.Run.ID != "" {
		return m.in.Run.Seed
	}
	return m.local
}

// derive appends the creation event of a new session with a deterministic
// id and returns the id.
func (m *Manager) derive(ctx context.Context, scope, op string, build func(id string, d events.Derivation) events.Payload) (string, error) {
	seed := m.seedOf()
	key := projections.CounterScope(seed, scope)
	for range maxIDAttempts {
		counter, err := m.reserve(ctx, key)
		if err != nil {
			return "", err
		}
		d := events.Derivation{Seed: seed, Scope: scope, Op: op, Counter: counter}
		id := DeriveID(seed, scope, op, counter)
		_, err = m.Appender().Append(ctx, id, eventlog.NoStream, build(id, d))
		var ce *eventlog.ConflictError
		if errors.As(err, &ce) && ce.Stream == id {
			continue // another process took it; the next reserve re-reads
		}
		if err != nil {
			return "", err
		}
		return id, nil
	}
	return "", fmt.Errorf("session: no free id in scope %q after %d attempts", scope, maxIDAttempts)
}

// reserve hands out the next id counter in a scope: the larger of the
// stored counter and the last one this process handed out, so concurrent
// derivations in one process never collide.
func (m *Manager) reserve(ctx context.Context, key string) (int64, error) {
	stored, err := m.reader.NextCounter(ctx, key)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := max(stored, m.reserved[key])
	m.reserved[key] = n + 1
	return n, nil
}

// New creates a root session with the given origin and initial chunks.
func (m *Manager) New(ctx context.Context, origin string, chunks ...Chunk) (*Session, error) {
	for i, c := range chunks {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("session: new: chunk %d: %w", i, err)
		}
	}
	id, err := m.derive(ctx, "", "new", func(id string, d events.Derivation) events.Payload {
		return events.SessionCreated{Session: id, Origin: origin, Chunks: chunks, Derivation: d}
	})
	if err != nil {
		return nil, fmt.Errorf("session: new: %w", err)
	}
	add := make([]entry, len(chunks))
	for i, c := range chunks {
		add[i] = entry{chunk: c, home: id, idx: int64(i)}
	}
	return &Session{m: m, id: id, version: 1, log: &chunkLog{items: add}, n: len(add), lineage: Lineage{Kind: KindRoot}}, nil
}

// handle returns a handle on the first n chunks of session id: from the
// cache, reading only the chunks stored since the cached view, or from the
// store.
func (m *Manager) handle(ctx context.Context, id string, n int64) (*Session, error) {
	epoch, err := m.store.KeyEpoch(ctx)
	if err != nil {
		return nil, err
	}
	m.chunks.sync(epoch)
	log, have, ok := m.chunks.get(id)
	if ok && int64(have) >= n {
		return &Session{m: m, id: id, log: log, n: int(n)}, nil
	}
	if !ok {
		log, have = &chunkLog{}, 0
	}
	stored, err := m.reader.ChunkRange(ctx, id, int64(have), n)
	if err != nil {
		return nil, err
	}
	add := make([]entry, len(stored))
	for i, c := range stored {
		add[i] = entry{chunk: c.Chunk, home: c.Home, idx: c.Index}
	}
	log = log.extend(have, add)
	m.chunks.put(epoch, id, log, int(n))
	return &Session{m: m, id: id, log: log, n: int(n)}, nil
}

func (m *Manager) lineage(ctx context.Context, row projections.SessionRow) (Lineage, error) {
	l := Lineage{Kind: row.Kind, Source: row.Source.String}
	edges, err := m.reader.Parents(ctx, row.ID)
	if err != nil {
		return l, err
	}
	for _, e := range edges {
		l.Parents = append(l.Parents, e.Parent)
	}
	return l, nil
}

// Load returns a handle on the session's head, or ErrNotFound.
func (m *Manager) Load(ctx context.Context, id string) (*Session, error) {
	row, err := m.reader.Session(ctx, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	s, err := m.handle(ctx, id, row.Length)
	if err != nil {
		return nil, fmt.Errorf("session: load %s: %w", id, err)
	}
	s.version = row.Version
	s.placement = Placement{Backend: row.Backend, Spec: row.Spec}
	s.usage = row.Usage()
	if s.lineage, err = m.lineage(ctx, row); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadAt returns a handle on the session as it was after the event at seq
// (time travel). The handle is stale unless nothing happened to the session
// since; fork it to continue from there. ErrNotFound if the session did not
// exist yet at seq. It starts from the session's latest snapshot at or
// before seq (projections.SnapshotEvery events apart) and folds the few
// events after it, so it costs the same at any seq and any length.
func (m *Manager) LoadAt(ctx context.Context, id string, seq int64) (*Session, error) {
	return m.loadAt(ctx, id, seq, true)
}

func (m *Manager) loadAt(ctx context.Context, id string, seq int64, fromSnapshot bool) (*Session, error) {
	row, err := m.reader.Session(ctx, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	st := state{id: id}
	var evs []events.Event
	if !fromSnapshot {
		evs, err = m.store.Read(ctx, eventlog.Query{Stream: id, ToSeq: seq})
	} else {
		snap, serr := m.reader.SnapshotAt(ctx, id, seq)
		switch {
		case serr == nil:
			st.version, st.length = snap.Version, snap.Length
			st.placement = Placement{Backend: snap.Backend, Spec: snap.Spec}
			st.usage = Usage{PromptTokens: snap.Prompt, CompletionTokens: snap.Completion, TotalTokens: snap.Total, Calls: snap.Calls}
		case !errors.Is(serr, projections.ErrNotFound):
			return nil, fmt.Errorf("session: time travel %s: %w", id, serr)
		}
		// Fewer than SnapshotEvery events lie between a snapshot and seq.
		evs, err = m.store.ReadStreamUntil(ctx, id, st.version+1, seq, projections.SnapshotEvery)
	}
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 && st.version == 0 {
		return nil, fmt.Errorf("%w: %s did not exist yet at seq %d", ErrNotFound, id, seq)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeChunkAppended && ev.Redacted {
			// Its content was deleted; its place in the session stays
			// (eventlog/shape.go).
			st.length++
			st.version = ev.Version
			continue
		}
		if ev.Type == events.TypeChunkAppended {
			// The common case, decoded by the fast path.
			ca, err := events.DecodeChunkAppended(ev.Payload, ev.TypeVersion)
			if err != nil {
				return nil, fmt.Errorf("session: time travel %s: %w", id, err)
			}
			st.apply(&ca)
			st.version = ev.Version
			continue
		}
		p, err := ev.Decode()
		if errors.Is(err, events.ErrUnknownType) || errors.Is(err, events.ErrRedacted) && !changesSession[ev.Type] {
			st.version = ev.Version
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("session: time travel %s: %w", id, err)
		}
		st.apply(p)
		st.version = ev.Version
	}
	s, err := m.handle(ctx, id, st.length)
	if err != nil {
		return nil, fmt.Errorf("session: time travel %s: %w", id, err)
	}
	s.version, s.placement, s.usage = st.version, st.placement, st.usage
	if s.lineage, err = m.lineage(ctx, row); err != nil {
		return nil, err
	}
	return s, nil
}

// state folds a session's own stream.
type state struct {
	id        string
	version   int64
	length    int64
	placement Placement
	usage     Usage
}

func (st *state) apply(p events.Payload) {
	switch e := p.(type) {
	case *events.SessionCreated:
		st.length = int64(len(e.Chunks))
	case *events.SessionForked:
		st.length, st.placement, st.usage = e.BaseLen, e.Placement, e.Usage
	case *events.SessionDetached:
		st.length, st.placement = e.BaseLen, e.Placement
	case *events.SessionMerged:
		st.length, st.placement, st.usage = e.Parents[0].Len+int64(len(e.Chunks)), e.Placement, e.Usage
	case *events.SessionCompressed:
		st.length, st.placement, st.usage = int64(len(e.Chunks)), e.Placement, e.Usage
	case *events.SessionImported:
		st.placement, st.usage = e.Placement, e.Usage
	case *events.ChunkAppended:
		st.length = e.Index + 1
	case *events.SessionPlaced:
		st.placement = Placement{Backend: e.Backend, Spec: e.Spec}
	case *events.ProviderCalled:
		if e.Session == st.id {
			st.usage = st.usage.Add(callUsage(e.Usage))
		}
	}
}

// changesSession are the types whose events shape a session (its chunks,
// its lineage, its placement): a session with one of them redacted cannot
// be rebuilt and says so. Others (a redacted model call or tool result)
// are passed over.
var changesSession = map[string]bool{
	events.TypeSessionCreated: true, events.TypeSessionForked: true, events.TypeSessionDetached: true,
	events.TypeSessionMerged: true, events.TypeSessionCompressed: true, events.TypeSessionImported: true,
	events.TypeChunkAppended: true, events.TypeSessionPlaced: true,
}
