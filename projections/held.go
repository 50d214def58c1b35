package projections

import (
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// An Append usually carries several events of one session (a model call,
// its chunks, a tool's result), and each moves the session's row: its
// version, and its length or token totals. Those updates are held back
// (touch, chunkAppended, providerCalled) and written as one UPDATE per
// session at the Append's end (EndRequest), or earlier when an event needs
// the row as it stands (mayHold; a snapshot copies the row). They are
// increments and a latest version, so writing them together gives the
// same row.

// heldKey is the eventlog.Tx value key of an Append's held updates.
type heldKey struct{}

// heldUpdates are the session row updates an Append has held back, in the
// order their sessions were first touched.
type heldUpdates struct {
	deltas []*sessionDelta
}

// sessionDelta is what the held events change in one session's row.
type sessionDelta struct {
	id string
	// chunks appended, the first at index firstIndex: the row's length
	// must be firstIndex when they are written.
	chunks, firstIndex int64
	// provider calls on the session's own stream and their tokens; the
	// session must exist.
	calls                     int64
	prompt, completion, total int64
	version, updatedSeq       int64
}

// heldIn returns tx's held updates, making them on first use.
func heldIn(tx *eventlog.Tx) *heldUpdates {
	if h, ok := tx.Value(heldKey{}).(*heldUpdates); ok {
		return h
	}
	h := &heldUpdates{}
	tx.SetValue(heldKey{}, h)
	return h
}

func (h *heldUpdates) delta(id string) *sessionDelta {
	for _, d := range h.deltas {
		if d.id == id {
			return d
		}
	}
	d := &sessionDelta{id: id}
	h.deltas = append(h.deltas, d)
	return d
}

// mayHold reports whether an event of type typ only moves session rows in
// ways that can be held (a chunk, a model call, the event types the
// projector has no case for, which only move their stream's version).
// Before any other event the held updates are written, so its case reads
// and sets rows as they stand; a type missing here is only slower. A type
// listed here that gets a case of its own must not read or set a session
// row directly.
func mayHold(typ string) bool {
	switch typ {
	case events.TypeChunkAppended, events.TypeProviderCalled, events.TypeProviderFailed,
		events.TypeToolCalled, events.TypeToolReturned, events.TypeWorkflowEntered, events.TypeWorkflowExited,
		events.TypeSelectorDecided, events.TypeAgentCapped, events.TypeEffectRecorded,
		events.TypeMemoryRemembered, events.TypeMemoryForgotten, events.TypeMemoryRecalled, events.TypeMemoryCommitted,
		events.TypeRunResumed, events.TypeSecretRedacted, events.TypeAccessViewed:
		return true
	}
	return false
}

// holdChunk holds a chunk of the session whose stream it is on, if it is
// the first held for that session or follows the held ones, and reports
// whether it did.
func (h *heldUpdates) holdChunk(ev *events.Event, e *events.ChunkAppended) bool {
	if ev.Stream != e.Session {
		return false
	}
	d := h.delta(e.Session)
	if d.chunks == 0 {
		d.firstIndex = e.Index
	} else if e.Index != d.firstIndex+d.chunks {
		return false
	}
	d.chunks++
	d.version, d.updatedSeq = ev.Version, ev.Seq
	return true
}

// holdCall holds a model call's update of its session's totals (a call on
// the session's own stream).
func (h *heldUpdates) holdCall(ev *events.Event, e *events.ProviderCalled) {
	d := h.delta(e.Session)
	d.calls++
	d.prompt += e.Usage.PromptTokens
	d.completion += e.Usage.CompletionTokens
	d.total += e.Usage.TotalTokens
	d.version, d.updatedSeq = ev.Version, ev.Seq
}

const heldUpdate = `UPDATE sessions SET length = length + ?, prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?,
	total_tokens = total_tokens + ?, calls = calls + ?, version = ?, updated_seq = ? WHERE id = ?`

// flushHeld writes the held updates.
func (a *applier) flushHeld() error {
	if a.held == nil || len(a.held.deltas) == 0 {
		return nil
	}
	deltas := a.held.deltas
	a.held.deltas = a.held.deltas[:0]
	for _, d := range deltas {
		if err := a.writeDelta(d); err != nil {
			return err
		}
	}
	return nil
}

// writeDelta writes a session's held update. Its answer is needed only to
// refuse a request whose session row is missing or holds another length,
// so it is pipelined (eventlog.Tx.ExecPipelined): on PostgreSQL it goes with
// the transaction's next statement instead of waiting for its own round
// trip, and a batch in which it changed no row is written again with it
// run at once, where the refusal below is made.
func (a *applier) writeDelta(d *sessionDelta) error {
	if d.chunks == 0 && d.calls == 0 {
		// Only a version moved; a stream that is no session's matches no row.
		return a.tx.ExecPipelined(`UPDATE sessions SET version = ?, updated_seq = ? WHERE id = ?`, d.version, d.updatedSeq, d.id)
	}
	q, args := heldUpdate, []any{d.chunks, d.prompt, d.completion, d.total, d.calls, d.version, d.updatedSeq, d.id}
	if d.chunks > 0 {
		// The first held chunk's index must be the stored length.
		q, args = q+` AND length = ?`, append(args, d.firstIndex)
	}
	queued, res, err := a.tx.ExecPipelinedRequiringRow(q, args...)
	if err != nil {
		return fmt.Errorf("projections: update session %q: %w", d.id, err)
	}
	if queued {
		return nil
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	si, ok, err := a.lookup(d.id)
	switch {
	case err != nil:
		return err
	case !ok && d.chunks > 0:
		return inconsistent("chunk for unknown session %q", d.id)
	case !ok:
		return inconsistent("provider call for unknown session %q", d.id)
	default:
		return inconsistent("chunk index %d for session %q, which has %d chunks", d.firstIndex, d.id, si.length)
	}
}
