package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

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

var _ events.Projector = Projector{}

// Project applies one event. The store hands payloads over as pointers.
func (Projector) Project(ctx context.Context, tx *events.Tx, ev *events.Event, p events.Payload) error {
	switch e := p.(type) {
	case *events.SessionCreated:
		return sessionCreated(tx, ev, e)
	case *events.ChunkAppended:
		return chunkAppended(tx, ev, e)
	case *events.SessionForked:
		return sessionForked(tx, ev, e)
	case *events.SessionDetached:
		return sessionDetached(tx, ev, e)
	case *events.SessionMerged:
		return sessionMerged(tx, ev, e)
	case *events.SessionPlaced:
		return sessionPlaced(tx, ev, e)
	case *events.SessionImported:
		return sessionImported(tx, ev, e)
	case *events.ProviderCalled:
		return providerCalled(tx, ev, e)
	case *events.RunStarted:
		return runStarted(tx, ev, e)
	case *events.RunFinished:
		return runFinished(tx, ev, e)
	}
	// Any other event on a session stream still moves its version.
	return touch(tx, ev)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func touch(tx *events.Tx, ev *events.Event) error {
	_, err := tx.Exec(`UPDATE sessions SET version = ?, updated_seq = ? WHERE id = ?`, ev.Version, ev.Seq, ev.Stream)
	return err
}

type sessionInfo struct {
	length, baseLen, version int64
	base                     sql.NullString
}

func lookup(tx *events.Tx, id string) (sessionInfo, bool, error) {
	var si sessionInfo
	err := tx.QueryRow(`SELECT length, base_len, base, version FROM sessions WHERE id = ?`, id).Scan(&si.length, &si.baseLen, &si.base, &si.version)
	if errors.Is(err, sql.ErrNoRows) {
		return si, false, nil
	}
	if err != nil {
		return si, false, fmt.Errorf("projections: look up session %q: %w", id, err)
	}
	return si, true, nil
}

func mustNotExist(tx *events.Tx, id string) error {
	if _, ok, err := lookup(tx, id); err != nil {
		return err
	} else if ok {
		return inconsistent("session %q already exists", id)
	}
	return nil
}

const insertSession = `INSERT INTO sessions (id, version, kind, origin, source, base, base_len, length, backend, spec,
	prompt_tokens, completion_tokens, total_tokens, calls, incomplete, run_id, created_seq, updated_seq)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

type newSession struct {
	id, kind, origin, source, base string
	baseLen, length                int64
	placement                      events.Placement
	usage                          events.Usage
	incomplete                     bool
}

func insert(tx *events.Tx, ev *events.Event, s newSession) error {
	inc := 0
	if s.incomplete {
		inc = 1
	}
	_, err := tx.Exec(insertSession, s.id, ev.Version, s.kind, s.origin, nullable(s.source), nullable(s.base), s.baseLen, s.length,
		s.placement.Backend, s.placement.Spec, s.usage.PromptTokens, s.usage.CompletionTokens, s.usage.TotalTokens, s.usage.Calls,
		inc, nullable(ev.RunID), ev.Seq, ev.Seq)
	if err != nil {
		return fmt.Errorf("projections: insert session %q: %w", s.id, err)
	}
	return nil
}

const insertChunk = `INSERT INTO chunks (session, idx, role, author, name, tool_call_id, content, tool_calls, meta, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func putChunk(tx *events.Tx, session string, idx int64, c *events.Chunk, seq int64) error {
	var calls, meta string
	if len(c.ToolCalls) > 0 {
		b, err := json.Marshal(c.ToolCalls)
		if err != nil {
			return err
		}
		calls = string(b)
	}
	if len(c.Meta) > 0 {
		b, err := json.Marshal(c.Meta)
		if err != nil {
			return err
		}
		meta = string(b)
	}
	if _, err := tx.Exec(insertChunk, session, idx, c.Role, c.Author, c.Name, c.ToolCallID, c.Content, calls, meta, seq); err != nil {
		return fmt.Errorf("projections: insert chunk %s[%d]: %w", session, idx, err)
	}
	return nil
}

// counted records that the id counter in d's scope was used.
func counted(tx *events.Tx, d events.Derivation) error {
	_, err := tx.Exec(`INSERT INTO id_counters (scope, n) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET n = max(n, excluded.n)`,
		CounterScope(d.Seed, d.Scope), d.Counter+1)
	return err
}

// CounterScope is the id_counters key for ids derived from parent under seed.
func CounterScope(seed, parent string) string { return seed + "/" + parent }

func sessionCreated(tx *events.Tx, ev *events.Event, e *events.SessionCreated) error {
	if err := mustNotExist(tx, e.Session); err != nil {
		return err
	}
	if err := insert(tx, ev, newSession{id: e.Session, kind: "root", origin: e.Origin, length: int64(len(e.Chunks))}); err != nil {
		return err
	}
	for i := range e.Chunks {
		if err := putChunk(tx, e.Session, int64(i), &e.Chunks[i], ev.Seq); err != nil {
			return err
		}
	}
	return counted(tx, e.Derivation)
}

func chunkAppended(tx *events.Tx, ev *events.Event, e *events.ChunkAppended) error {
	si, ok, err := lookup(tx, e.Session)
	if err != nil {
		return err
	}
	if !ok {
		return inconsistent("chunk for unknown session %q", e.Session)
	}
	if e.Index != si.length {
		return inconsistent("chunk index %d for session %q, which has %d chunks", e.Index, e.Session, si.length)
	}
	if err := putChunk(tx, e.Session, e.Index, &e.Chunk, ev.Seq); err != nil {
		return err
	}
	_, err = tx.Exec(`UPDATE sessions SET length = length + 1, version = ?, updated_seq = ? WHERE id = ?`, ev.Version, ev.Seq, e.Session)
	return err
}

// shareBase returns the shallowest session that physically holds the first
// n chunks of src's prefix: a fork of a fork that wrote nothing points at
// the original, which keeps base chains short.
func shareBase(tx *events.Tx, src string, n int64) (string, error) {
	cur := src
	for {
		si, ok, err := lookup(tx, cur)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", inconsistent("unknown session %q", cur)
		}
		if n > si.baseLen || !si.base.Valid {
			return cur, nil
		}
		cur = si.base.String
	}
}

func derive(tx *events.Tx, ev *events.Event, id, kind, source string, baseLen int64, pl events.Placement, u events.Usage, d events.Derivation) error {
	if err := mustNotExist(tx, id); err != nil {
		return err
	}
	si, ok, err := lookup(tx, source)
	if err != nil {
		return err
	}
	if !ok {
		return inconsistent("%s of unknown session %q", kind, source)
	}
	if baseLen > si.length {
		return inconsistent("%s of %q shares %d chunks, but it has %d", kind, source, baseLen, si.length)
	}
	base, err := shareBase(tx, source, baseLen)
	if err != nil {
		return err
	}
	if err := insert(tx, ev, newSession{id: id, kind: kind, source: source, base: base, baseLen: baseLen, length: baseLen, placement: pl, usage: u}); err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE sessions SET children = children + 1 WHERE id = ?`, source); err != nil {
		return err
	}
	return counted(tx, d)
}

func edge(tx *events.Tx, child, parent, kind string, pos int, seq int64) error {
	if _, err := tx.Exec(`INSERT INTO session_edges (child, parent, kind, position, seq) VALUES (?, ?, ?, ?, ?)`, child, parent, kind, pos, seq); err != nil {
		return fmt.Errorf("projections: edge %s -> %s: %w", child, parent, err)
	}
	return nil
}

func sessionForked(tx *events.Tx, ev *events.Event, e *events.SessionForked) error {
	if err := derive(tx, ev, e.Session, "fork", e.Source, e.BaseLen, e.Placement, e.Usage, e.Derivation); err != nil {
		return err
	}
	return edge(tx, e.Session, e.Source, "fork", 0, ev.Seq)
}

func sessionDetached(tx *events.Tx, ev *events.Event, e *events.SessionDetached) error {
	// No edge: a detached session has no lineage parent. The source column
	// and the event keep the provenance.
	return derive(tx, ev, e.Session, "detach", e.Source, e.BaseLen, e.Placement, events.Usage{}, e.Derivation)
}

func sessionMerged(tx *events.Tx, ev *events.Event, e *events.SessionMerged) error {
	first := e.Parents[0]
	if err := derive(tx, ev, e.Session, "merge", first.ID, first.Len, e.Placement, e.Usage, e.Derivation); err != nil {
		return err
	}
	for i := range e.Chunks {
		if err := putChunk(tx, e.Session, first.Len+int64(i), &e.Chunks[i], ev.Seq); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`UPDATE sessions SET length = ? WHERE id = ?`, first.Len+int64(len(e.Chunks)), e.Session); err != nil {
		return err
	}
	for i, p := range e.Parents {
		if i > 0 {
			if _, ok, err := lookup(tx, p.ID); err != nil {
				return err
			} else if !ok {
				return inconsistent("merge of unknown session %q", p.ID)
			}
			if _, err := tx.Exec(`UPDATE sessions SET children = children + 1 WHERE id = ?`, p.ID); err != nil {
				return err
			}
		}
		if err := edge(tx, e.Session, p.ID, "merge", i, ev.Seq); err != nil {
			return err
		}
	}
	return nil
}

func sessionPlaced(tx *events.Tx, ev *events.Event, e *events.SessionPlaced) error {
	res, err := tx.Exec(`UPDATE sessions SET backend = ?, spec = ?, version = ?, updated_seq = ? WHERE id = ?`, e.Backend, e.Spec, ev.Version, ev.Seq, e.Session)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return inconsistent("placement of unknown session %q", e.Session)
	}
	return nil
}

func sessionImported(tx *events.Tx, ev *events.Event, e *events.SessionImported) error {
	if err := mustNotExist(tx, e.Session); err != nil {
		return err
	}
	if err := insert(tx, ev, newSession{id: e.Session, kind: "import", origin: e.Format, placement: e.Placement, usage: e.Usage, incomplete: e.Incomplete}); err != nil {
		return err
	}
	kind := e.LineageKind
	if kind == "" {
		kind = "import"
	}
	for i, p := range e.Parents {
		if _, ok, err := lookup(tx, p); err != nil {
			return err
		} else if !ok {
			return inconsistent("imported session %q names parent %q, which is not in the store", e.Session, p)
		}
		if err := edge(tx, e.Session, p, kind, i, ev.Seq); err != nil {
			return err
		}
	}
	return nil
}

func providerCalled(tx *events.Tx, ev *events.Event, e *events.ProviderCalled) error {
	u := e.Usage
	if _, err := tx.Exec(`INSERT INTO usage (seq, session, run_id, agent, model, prompt_tokens, completion_tokens, total_tokens, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ev.Seq, e.Session, nullable(ev.RunID), e.Agent, e.Model, u.PromptTokens, u.CompletionTokens, u.TotalTokens, e.LatencyMS); err != nil {
		return err
	}
	res, err := tx.Exec(`UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, total_tokens = total_tokens + ?, calls = calls + 1, version = ?, updated_seq = ? WHERE id = ?`,
		u.PromptTokens, u.CompletionTokens, u.TotalTokens, ev.Version, ev.Seq, e.Session)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return inconsistent("provider call for unknown session %q", e.Session)
	}
	return nil
}

func runStarted(tx *events.Tx, ev *events.Event, e *events.RunStarted) error {
	_, err := tx.Exec(`INSERT INTO runs (id, workflow, input_session, seed, code_version, status, parent_run, started_seq, started_at) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)`,
		e.Run, e.Workflow, e.InputSession, e.Seed, e.CodeVersion, e.ParentRun, ev.Seq, ev.At.UnixNano())
	if err != nil {
		return fmt.Errorf("projections: run %q: %w", e.Run, err)
	}
	return nil
}

func runFinished(tx *events.Tx, ev *events.Event, e *events.RunFinished) error {
	res, err := tx.Exec(`UPDATE runs SET status = ?, error = ?, output_session = ?, finished_seq = ?, finished_at = ? WHERE id = ?`,
		e.Status, e.Error, e.OutputSession, ev.Seq, ev.At.UnixNano(), e.Run)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return inconsistent("run.finished for unknown run %q", e.Run)
	}
	return nil
}
