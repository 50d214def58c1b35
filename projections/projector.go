package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ErrInconsistent is matched by errors for events that contradict the read
// model (a chunk for an unknown session, an index out of order). Such an
// event is refused, so the log never holds one.
var ErrInconsistent = errors.New("projections: event inconsistent with state")

func inconsistent(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInconsistent, fmt.Sprintf(format, args...))
}

// Projector maintains the SQL read models. It is stateless and safe for
// concurrent use; the store calls it from its writer goroutine.
type Projector struct{}

var _ eventlog.RequestProjector = Projector{}

// Project applies one event. The store hands payloads over as pointers.
func (Projector) Project(ctx context.Context, tx *eventlog.Tx, ev *events.Event, p events.Payload) error {
	return (&applier{ctx: ctx, tx: tx, held: heldIn(tx)}).project(ev, p)
}

// EndRequest writes the session row updates held back while an Append's
// events were projected.
func (Projector) EndRequest(ctx context.Context, tx *eventlog.Tx) error {
	h, _ := tx.Value(heldKey{}).(*heldUpdates)
	return (&applier{tx: tx, held: h}).flushHeld()
}

// applier applies events in one transaction. With a cache (rebuilds, which
// hold the writer exclusively), the session rows and id counters are kept
// in memory and written once by flush, and the rows of usage, edges and
// snapshots go in multi-row INSERTs (bulk.go). Without one, an Append's
// updates of a session row are held back and written once at its end
// (held).
type applier struct {
	ctx context.Context
	tx  *eventlog.Tx
	// src is the store a rebuild reads the log from: the keys of what it
	// seals (sealed.go) are found there. Nil during an append.
	src   *eventlog.Store
	cache map[string]*sessionInfo // nil: read and write the table directly
	bulk  *rebuildRows            // with cache: the rows written in bulk
	held  *heldUpdates            // nil: write each update as it comes
	// redactedRequests are the approval streams whose request a rebuild
	// met redacted (nil outside rebuilds).
	redactedRequests map[string]bool
}

// SnapshotEvery is how many events of a session's stream lie between two
// of its snapshots (session_snapshots): time travel folds fewer than this.
const SnapshotEvery = 128

func (a *applier) project(ev *events.Event, p events.Payload) error {
	if !mayHold(ev.Type) {
		// Its case may read or set a session row: bring the rows up to date.
		if err := a.flushHeld(); err != nil {
			return err
		}
	}
	if err := a.apply(ev, p); err != nil {
		return err
	}
	if events.KeepsShape(ev.Type) || indexedByKey[ev.Type] {
		if err := a.sealedByKey(ev); err != nil {
			return err
		}
	}
	if ev.Version%SnapshotEvery != 0 {
		return nil
	}
	if err := a.flushHeld(); err != nil { // a snapshot copies the row
		return err
	}
	return a.snapshot(ev)
}

// indexedByKey are the types sealedByKey indexes besides the shaped ones.
var indexedByKey = map[string]bool{events.TypeMemoryRemembered: true, events.TypeSessionPlaced: true, events.TypeProviderCalled: true}

// sealedByKey indexes an event that starts or links a session, places
// one, records a model call or remembers a memory, by the key its
// payload is sealed under (sealed_by_key): an erasure reads through it
// the shapes it keeps of the subject's sessions, the sessions whose
// sandbox and usage it recounts and the memories it purges, wherever the
// subject made them, in a run or outside one. An event in clear, or
// under a key already destroyed (a rebuild opens nothing of it), gets
// no row.
func (a *applier) sealedByKey(ev *events.Event) error {
	id := ev.SealedUnder.ID
	if dk, ok := a.tx.SealingKey(ev); ok {
		id = ""
		if dk != nil {
			id = dk.ID
		}
	}
	if id == "" {
		return nil
	}
	var err error
	if a.bulk != nil {
		err = a.bulk.byKey.add(a.tx, id, ev.Seq, ev.Type)
	} else {
		err = a.tx.ExecPipelined(`INSERT INTO sealed_by_key (key_id, seq, type) VALUES (?, ?, ?)`, id, ev.Seq, ev.Type)
	}
	if err != nil {
		return fmt.Errorf("projections: index the key of seq %d: %w", ev.Seq, err)
	}
	return nil
}

// snapshot records the state of the session whose stream ev is on, as of
// ev (nothing if the stream is not a session's).
func (a *applier) snapshot(ev *events.Event) error {
	const cols = `INSERT INTO session_snapshots (session, seq, version, length, backend, spec, prompt_tokens, completion_tokens, total_tokens, calls)
		SELECT id, ?, ?, `
	const from = `, backend, spec, prompt_tokens, completion_tokens, total_tokens, calls FROM sessions WHERE id = ?`
	var err error
	if a.cache != nil {
		si, ok := a.cache[ev.Stream]
		if !ok {
			return nil
		}
		err = a.bulk.snapshots.add(a.tx, ev.Stream, ev.Seq, ev.Version, si.length, si.backend, si.spec,
			si.usage.PromptTokens, si.usage.CompletionTokens, si.usage.TotalTokens, si.usage.Calls)
	} else {
		err = a.tx.ExecPipelined(cols+`length`+from, ev.Seq, ev.Version, ev.Stream)
	}
	if err != nil {
		return fmt.Errorf("projections: snapshot %s v%d: %w", ev.Stream, ev.Version, err)
	}
	return nil
}

func (a *applier) apply(ev *events.Event, p events.Payload) error {
	tx := a.tx
	// A session's chunks are read from its own stream (Reader.ChunkRange),
	// so the events that carry them must be there.
	var carrier string
	switch e := p.(type) {
	case *events.SessionCreated:
		carrier = e.Session
	case *events.ChunkAppended:
		carrier = e.Session
	case *events.SessionMerged:
		carrier = e.Session
	case *events.SessionCompressed:
		carrier = e.Session
	}
	if carrier != "" && ev.Stream != carrier {
		return inconsistent("%s of session %q on stream %q", ev.Type, carrier, ev.Stream)
	}
	switch e := p.(type) {
	case *events.SessionCreated:
		return a.sessionCreated(ev, e)
	case *events.ChunkAppended:
		return a.chunkAppended(ev, e)
	case *events.SessionForked:
		return a.sessionForked(ev, e)
	case *events.SessionDetached:
		return a.sessionDetached(ev, e)
	case *events.SessionMerged:
		return a.sessionMerged(ev, e)
	case *events.SessionPlaced:
		return a.sessionPlaced(ev, e)
	case *events.SessionImported:
		return a.sessionImported(ev, e)
	case *events.SessionCompressed:
		return a.sessionCompressed(ev, e)
	case *events.ProviderCalled:
		return a.providerCalled(ev, e)
	case *events.RunStarted:
		return a.runStarted(ev, e)
	case *events.RunFinished:
		return a.runFinished(ev, e)
	case *events.RunSubmitted:
		return a.runSubmitted(ev, e)
	case *events.RunLeased:
		return runLeased(tx, ev, e)
	case *events.ApprovalRequested:
		return a.approvalRequested(ev, e)
	case *events.DatasetCreated:
		if err := datasetCreated(tx, ev, e); err != nil {
			return err
		}
	case *events.MemoryRemembered:
		if err := memoryRemembered(tx, ev, e); err != nil {
			return err
		}
	case *events.ApprovalDecided:
		return a.approvalDecided(ev, e)
	case *events.TokenCreated:
		return tokenCreated(tx, ev, e)
	case *events.TokenRevoked:
		return tokenRevoked(tx, ev, e)
	case *events.AccessViewed:
		return accessViewed(tx, ev, e)
	}
	// Any other event on a session stream still moves its version.
	return a.touch(ev)
}

// redacted applies a redacted event that kept no shape (events/shape.go)
// from what its leaf still says: a chunk.appended added one chunk at the
// end of the session its stream is; an approval.requested opened its
// stream, whose decision, if it was not redacted too, then decides
// nothing the projections hold; a memory.remembered remembered in the
// namespace its stream names. Any other still moves its stream's
// version.
func (a *applier) redacted(ev *events.Event) error {
	switch ev.Type {
	case events.TypeChunkAppended:
		if si, ok := a.cache[ev.Stream]; ok {
			si.length, si.version, si.updatedSeq = si.length+1, ev.Version, ev.Seq
			return nil
		}
		if a.cache == nil {
			return a.tx.ExecPipelined(`UPDATE sessions SET length = length + 1, version = ?, updated_seq = ? WHERE id = ?`, ev.Version, ev.Seq, ev.Stream)
		}
	case events.TypeApprovalRequested:
		if a.redactedRequests != nil {
			a.redactedRequests[ev.Stream] = true
		}
	case events.TypeMemoryRemembered:
		// Its namespace is its stream's name, in clear: the namespace's
		// row stays as the append made it.
		if ns, ok := strings.CutPrefix(ev.Stream, events.MemoryStream("")); ok && ns != "" {
			if err := memoryRemembered(a.tx, ev, &events.MemoryRemembered{Namespace: ns}); err != nil {
				return err
			}
		}
	}
	return a.touch(ev)
}

// flush writes a rebuild's cached session rows and id counters, and the
// rest of its queued rows.
func (a *applier) flush() error {
	b := a.bulk
	for _, id := range slices.Sorted(maps.Keys(a.cache)) {
		si := a.cache[id]
		if err := b.sessions.add(a.tx, id, si.version, si.kind, si.origin, nullable(si.source), nullable(si.base.String), si.baseLen, si.length,
			si.backend, si.spec, si.usage.PromptTokens, si.usage.CompletionTokens, si.usage.TotalTokens, si.usage.Calls,
			si.children, si.incomplete, nullable(si.runID), si.createdSeq, si.updatedSeq, si.tenant); err != nil {
			return err
		}
	}
	for _, scope := range slices.Sorted(maps.Keys(b.counterN)) {
		if err := b.counters.add(a.tx, scope, b.counterN[scope]); err != nil {
			return err
		}
	}
	for _, t := range []*bulkInsert{b.sessions, b.counters, b.usage, b.edges, b.snapshots, b.byKey} {
		if err := t.flush(a.tx); err != nil {
			return err
		}
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (a *applier) touch(ev *events.Event) error {
	if a.cache != nil {
		if si, ok := a.cache[ev.Stream]; ok {
			si.version, si.updatedSeq = ev.Version, ev.Seq
		}
		return nil
	}
	if a.held != nil {
		d := a.held.delta(ev.Stream)
		d.version, d.updatedSeq = ev.Version, ev.Seq
		return nil
	}
	return a.tx.ExecPipelined(`UPDATE sessions SET version = ?, updated_seq = ? WHERE id = ?`, ev.Version, ev.Seq, ev.Stream)
}

// sessionInfo is what the projector reads of a session row; in a
// rebuild's cache, the whole row.
type sessionInfo struct {
	length, baseLen, version, updatedSeq int64
	base                                 sql.NullString

	// The rest of the row, kept in a rebuild's cache only.
	kind, origin, source, runID string
	backend, spec               string
	usage                       events.Usage // its Calls is the row's calls
	children, createdSeq        int64
	incomplete                  int
	// tenant is read by lookup in both modes: a merge compares its
	// parents'.
	tenant string
}

func (a *applier) lookup(id string) (sessionInfo, bool, error) {
	if a.cache != nil {
		si, ok := a.cache[id]
		if !ok {
			return sessionInfo{}, false, nil
		}
		return *si, true, nil
	}
	var si sessionInfo
	err := a.tx.QueryRow(`SELECT length, base_len, base, version, tenant FROM sessions WHERE id = ?`, id).Scan(&si.length, &si.baseLen, &si.base, &si.version, &si.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return si, false, nil
	}
	if err != nil {
		return si, false, fmt.Errorf("projections: look up session %q: %w", id, err)
	}
	return si, true, nil
}

func (a *applier) mustNotExist(id string) error {
	if _, ok, err := a.lookup(id); err != nil {
		return err
	} else if ok {
		return inconsistent("session %q already exists", id)
	}
	return nil
}

// insertSession writes a session row; its tenant is its run's, else its
// source's (a fork's parent), else the default (sessionTenant in a
// rebuild).
const insertSession = `INSERT INTO sessions (id, version, kind, origin, source, base, base_len, length, backend, spec,
	prompt_tokens, completion_tokens, total_tokens, calls, incomplete, run_id, created_seq, updated_seq, tenant)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
		COALESCE((SELECT tenant FROM runs WHERE id = ?), (SELECT tenant FROM sessions WHERE id = ?), '` + events.DefaultTenant + `'))`

type newSession struct {
	id, kind, origin, source, base string
	baseLen, length                int64
	placement                      events.Placement
	usage                          events.Usage
	incomplete                     bool
}

func (a *applier) insert(ev *events.Event, s newSession) error {
	inc := 0
	if s.incomplete {
		inc = 1
	}
	if a.cache != nil {
		a.cache[s.id] = &sessionInfo{length: s.length, baseLen: s.baseLen, base: sql.NullString{String: s.base, Valid: s.base != ""},
			version: ev.Version, updatedSeq: ev.Seq, kind: s.kind, origin: s.origin, source: s.source, runID: ev.RunID,
			backend: s.placement.Backend, spec: s.placement.Spec, usage: s.usage, createdSeq: ev.Seq, incomplete: inc,
			tenant: a.sessionTenant(ev.RunID, s.source)}
		return nil
	}
	err := a.tx.ExecPipelined(insertSession, s.id, ev.Version, s.kind, s.origin, nullable(s.source), nullable(s.base), s.baseLen, s.length,
		s.placement.Backend, s.placement.Spec, s.usage.PromptTokens, s.usage.CompletionTokens, s.usage.TotalTokens, s.usage.Calls,
		inc, nullable(ev.RunID), ev.Seq, ev.Seq, nullable(ev.RunID), nullable(s.source))
	if err != nil {
		return fmt.Errorf("projections: insert session %q: %w", s.id, err)
	}
	return nil
}

// counted records that the id counter in d's scope was used: its value is
// the highest counter used, plus one.
func (a *applier) counted(d events.Derivation) error {
	if a.cache != nil {
		scope := CounterScope(d.Seed, d.Scope)
		a.bulk.counterN[scope] = max(a.bulk.counterN[scope], d.Counter+1)
		return nil
	}
	return a.tx.ExecPipelined(`INSERT INTO id_counters (scope, n) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET n = CASE WHEN excluded.n > id_counters.n THEN excluded.n ELSE id_counters.n END`,
		CounterScope(d.Seed, d.Scope), d.Counter+1)
}

// CounterScope is the id_counters key for ids derived from parent under seed.
func CounterScope(seed, parent string) string { return seed + "/" + parent }

// runLeased keeps a run's current lease, the lease stream's version (the
// one a take appends at) and when the holder took it: a renewal keeps
// taken_at.
func runLeased(tx *eventlog.Tx, ev *events.Event, e *events.RunLeased) error {
	takenAt, from := ev.At.UnixNano(), "excluded."
	if e.Renewal {
		takenAt, from = 0, "run_leases."
	}
	return tx.ExecPipelined(`INSERT INTO run_leases (run, worker, token, expires_at, seq, version, taken_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run) DO UPDATE SET worker = excluded.worker, token = excluded.token, expires_at = excluded.expires_at, seq = excluded.seq,
			version = excluded.version, taken_at = `+from+`taken_at`,
		e.Run, e.Worker, e.Token, e.ExpiresAt, ev.Seq, ev.Version, takenAt)
}

// paramsText is a run's params as the runs row holds them: their
// canonical JSON, the text their event holds, or empty for none.
func paramsText(params map[string]string) (string, error) {
	if len(params) == 0 {
		return "", nil
	}
	b, err := events.Canonical(params)
	return string(b), err
}

func (a *applier) runFinished(ev *events.Event, e *events.RunFinished) error {
	tx := a.tx
	msg, err := a.sealText(ev, colRunError, e.Run, e.Error)
	if err != nil {
		return err
	}
	missing := func() error {
		if erased, err := a.runRowErased(e.Run); erased || err != nil {
			return err
		}
		return inconsistent("run.finished for unknown run %q", e.Run)
	}
	if err := requireRow(tx, missing,
		`UPDATE runs SET status = ?, error = ?, output_session = ?, finished_seq = ?, finished_at = ? WHERE id = ?`,
		e.Status, msg, e.OutputSession, ev.Seq, ev.At.UnixNano(), e.Run); err != nil {
		return err
	}
	return nil
}

// requireRow runs an UPDATE whose event is refused when it changes no row
// (missing says why). Its answer is needed only for that, so it is
// pipelined (eventlog.Tx.ExecPipelinedRequiringRow): queued, a batch in
// which it changes no row is written again with it run at once, and
// missing is reported then.
func requireRow(tx *eventlog.Tx, missing func() error, query string, args ...any) error {
	queued, res, err := tx.ExecPipelinedRequiringRow(query, args...)
	if err != nil || queued {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return missing()
	}
	return nil
}
