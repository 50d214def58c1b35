package projections

import (
	"fmt"

	"github.com/gorath/rath/events"
)

// How the events of a session's life change the read models: its making,
// its chunks, its forks and merges, its placement, its model calls and
// their usage (projector.go dispatches them).

func (a *applier) sessionCreated(ev *events.Event, e *events.SessionCreated) error {
	if err := a.mustNotExist(e.Session); err != nil {
		return err
	}
	if err := a.insert(ev, newSession{id: e.Session, kind: "root", origin: e.Origin, length: int64(len(e.Chunks))}); err != nil {
		return err
	}
	return a.counted(e.Derivation)
}

func (a *applier) chunkAppended(ev *events.Event, e *events.ChunkAppended) error {
	if a.cache != nil {
		si, ok := a.cache[e.Session]
		if !ok {
			return inconsistent("chunk for unknown session %q", e.Session)
		}
		if e.Index != si.length {
			return inconsistent("chunk index %d for session %q, which has %d chunks", e.Index, e.Session, si.length)
		}
		si.length, si.version, si.updatedSeq = si.length+1, ev.Version, ev.Seq
		return nil
	}
	if a.held != nil {
		if a.held.holdChunk(ev, e) {
			return nil
		}
		// Not the next held chunk: the direct way below names the problem.
		if err := a.flushHeld(); err != nil {
			return err
		}
	}
	// One statement checks the index and moves the session on; only when
	// it matches nothing does a lookup say why.
	res, err := a.tx.Exec(`UPDATE sessions SET length = length + 1, version = ?, updated_seq = ? WHERE id = ? AND length = ?`, ev.Version, ev.Seq, e.Session, e.Index)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		si, ok, err := a.lookup(e.Session)
		if err != nil {
			return err
		}
		if !ok {
			return inconsistent("chunk for unknown session %q", e.Session)
		}
		return inconsistent("chunk index %d for session %q, which has %d chunks", e.Index, e.Session, si.length)
	}
	return nil
}

// shareBase returns the shallowest session that physically holds the first
// n chunks of src's prefix: a fork of a fork that wrote nothing points at
// the original, which keeps base chains short.
func (a *applier) shareBase(src string, n int64) (string, error) {
	cur := src
	for {
		si, ok, err := a.lookup(cur)
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

func (a *applier) derive(ev *events.Event, id, kind, source string, baseLen int64, pl events.Placement, u events.Usage, d events.Derivation) error {
	if err := a.mustNotExist(id); err != nil {
		return err
	}
	si, ok, err := a.lookup(source)
	if err != nil {
		return err
	}
	if !ok {
		return inconsistent("%s of unknown session %q", kind, source)
	}
	if baseLen > si.length {
		return inconsistent("%s of %q shares %d chunks, but it has %d", kind, source, baseLen, si.length)
	}
	base, err := a.shareBase(source, baseLen)
	if err != nil {
		return err
	}
	if err := a.insert(ev, newSession{id: id, kind: kind, source: source, base: base, baseLen: baseLen, length: baseLen, placement: pl, usage: u}); err != nil {
		return err
	}
	if err := a.childAdded(source); err != nil {
		return err
	}
	return a.counted(d)
}

// childAdded counts a session derived from id.
func (a *applier) childAdded(id string) error {
	if si, ok := a.cache[id]; ok {
		si.children++
		return nil
	}
	return a.tx.ExecPipelined(`UPDATE sessions SET children = children + 1 WHERE id = ?`, id)
}

func (a *applier) edge(child, parent, kind string, pos int, seq int64) error {
	if a.cache != nil {
		return a.bulk.edges.add(a.tx, child, parent, kind, pos, seq)
	}
	if err := a.tx.ExecPipelined(`INSERT INTO session_edges (child, parent, kind, position, seq) VALUES (?, ?, ?, ?, ?)`, child, parent, kind, pos, seq); err != nil {
		return fmt.Errorf("projections: edge %s -> %s: %w", child, parent, err)
	}
	return nil
}

func (a *applier) sessionForked(ev *events.Event, e *events.SessionForked) error {
	if err := a.derive(ev, e.Session, "fork", e.Source, e.BaseLen, e.Placement, e.Usage, e.Derivation); err != nil {
		return err
	}
	return a.edge(e.Session, e.Source, "fork", 0, ev.Seq)
}

func (a *applier) sessionDetached(ev *events.Event, e *events.SessionDetached) error {
	// No edge: a detached session has no lineage parent. The source column
	// and the event keep the provenance.
	return a.derive(ev, e.Session, "detach", e.Source, e.BaseLen, e.Placement, events.Usage{}, e.Derivation)
}

func (a *applier) sessionMerged(ev *events.Event, e *events.SessionMerged) error {
	first := e.Parents[0]
	if err := a.sameTenant(e); err != nil {
		return err
	}
	if err := a.derive(ev, e.Session, "merge", first.ID, first.Len, e.Placement, e.Usage, e.Derivation); err != nil {
		return err
	}
	if c, ok := a.cache[e.Session]; ok {
		c.length = first.Len + int64(len(e.Chunks))
	} else if _, err := a.tx.Exec(`UPDATE sessions SET length = ? WHERE id = ?`, first.Len+int64(len(e.Chunks)), e.Session); err != nil {
		return err
	}
	for i, p := range e.Parents {
		if i > 0 {
			if _, ok, err := a.lookup(p.ID); err != nil {
				return err
			} else if !ok {
				return inconsistent("merge of unknown session %q", p.ID)
			}
			if err := a.childAdded(p.ID); err != nil {
				return err
			}
		}
		if err := a.edge(e.Session, p.ID, "merge", i, ev.Seq); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) sessionPlaced(ev *events.Event, e *events.SessionPlaced) error {
	if a.cache != nil {
		si, ok := a.cache[e.Session]
		if !ok {
			return inconsistent("placement of unknown session %q", e.Session)
		}
		si.backend, si.spec, si.version, si.updatedSeq = e.Backend, e.Spec, ev.Version, ev.Seq
		return nil
	}
	if err := requireRow(a.tx, func() error { return inconsistent("placement of unknown session %q", e.Session) },
		`UPDATE sessions SET backend = ?, spec = ?, version = ?, updated_seq = ? WHERE id = ?`, e.Backend, e.Spec, ev.Version, ev.Seq, e.Session); err != nil {
		return err
	}
	return nil
}

func (a *applier) sessionImported(ev *events.Event, e *events.SessionImported) error {
	if err := a.mustNotExist(e.Session); err != nil {
		return err
	}
	if err := a.insert(ev, newSession{id: e.Session, kind: "import", origin: e.Format, placement: e.Placement, usage: e.Usage, incomplete: e.Incomplete}); err != nil {
		return err
	}
	kind := e.LineageKind
	if kind == "" {
		kind = "import"
	}
	for i, p := range e.Parents {
		if _, ok, err := a.lookup(p); err != nil {
			return err
		} else if !ok {
			return inconsistent("imported session %q names parent %q, which is not in the store", e.Session, p)
		}
		if err := a.edge(e.Session, p, kind, i, ev.Seq); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) insertUsage(ev *events.Event, e *events.ProviderCalled) error {
	u := e.Usage
	if a.cache != nil {
		return a.bulk.usage.add(a.tx, ev.Seq, e.Session, nullable(ev.RunID), e.Agent, e.Model, u.PromptTokens, u.CompletionTokens, u.TotalTokens, e.LatencyMS)
	}
	// Its answer is not needed: the row goes with a later statement, in
	// its round trip.
	return a.tx.ExecPipelined(`INSERT INTO usage (seq, session, run_id, agent, model, prompt_tokens, completion_tokens, total_tokens, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ev.Seq, e.Session, nullable(ev.RunID), e.Agent, e.Model, u.PromptTokens, u.CompletionTokens, u.TotalTokens, e.LatencyMS)
}

func (a *applier) providerCalled(ev *events.Event, e *events.ProviderCalled) error {
	if err := a.insertUsage(ev, e); err != nil {
		return err
	}
	u := e.Usage
	if ev.Stream != e.Session {
		// A call recorded on a side stream (a selector's decisions) is in
		// the usage table but not in the session's own total, which counts
		// the calls on its stream, as its handle does.
		return nil
	}
	if a.cache != nil {
		si, ok := a.cache[e.Session]
		if !ok {
			return inconsistent("provider call for unknown session %q", e.Session)
		}
		si.usage.PromptTokens += u.PromptTokens
		si.usage.CompletionTokens += u.CompletionTokens
		si.usage.TotalTokens += u.TotalTokens
		si.usage.Calls++
		si.version, si.updatedSeq = ev.Version, ev.Seq
		return nil
	}
	if a.held != nil {
		a.held.holdCall(ev, e)
		return nil
	}
	res, err := a.tx.Exec(`UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, total_tokens = total_tokens + ?, calls = calls + 1, version = ?, updated_seq = ? WHERE id = ?`,
		u.PromptTokens, u.CompletionTokens, u.TotalTokens, ev.Version, ev.Seq, e.Session)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return inconsistent("provider call for unknown session %q", e.Session)
	}
	return nil
}

func (a *applier) sessionCompressed(ev *events.Event, e *events.SessionCompressed) error {
	if err := a.mustNotExist(e.Session); err != nil {
		return err
	}
	if _, ok, err := a.lookup(e.Source); err != nil {
		return err
	} else if !ok {
		return inconsistent("compression of unknown session %q", e.Source)
	}
	if err := a.insert(ev, newSession{id: e.Session, kind: "compress", source: e.Source, length: int64(len(e.Chunks)), placement: e.Placement, usage: e.Usage}); err != nil {
		return err
	}
	if err := a.childAdded(e.Source); err != nil {
		return err
	}
	if err := a.edge(e.Session, e.Source, "compress", 0, ev.Seq); err != nil {
		return err
	}
	return a.counted(e.Derivation)
}
